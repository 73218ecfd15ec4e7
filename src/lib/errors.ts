// Owns the API's error codes: every error is made here by code, thrown anywhere, rendered once.

export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  TOKEN_EXPIRED: 401,
  TOKEN_INVALID: 401,
  TOKEN_MISSING: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  HEADERS_TOO_LARGE: 431,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.statusCode = ERROR_STATUS[code];
  }
}

/** A 400 naming every bad field; its message names the first, as `field: message`. */
export const validation = (details: FieldError[], message?: string) =>
  new AppError(
    'VALIDATION_ERROR',
    message ?? (details[0] === undefined ? 'The request is invalid' : `${details[0].field}: ${details[0].message}`),
    details,
  );

export const fieldError = (field: string, message: string) => validation([{ field, message }]);

export const notFound = (what: string, id?: string) =>
  new AppError('NOT_FOUND', id === undefined ? `${what} not found` : `${what} ${id} not found`);

export const forbidden = (message = 'You do not have permission for this action') => new AppError('FORBIDDEN', message);

export const conflict = (message: string, details?: unknown) => new AppError('CONFLICT', message, details);

/** 401s carry a WWW-Authenticate challenge (RFC 6750); `tokenSent` adds error="invalid_token". */
export function authError(
  code: 'UNAUTHORIZED' | 'TOKEN_EXPIRED' | 'TOKEN_INVALID' | 'TOKEN_MISSING' | 'INVALID_CREDENTIALS',
  message: string,
  tokenSent: boolean,
): AppError {
  const challenge = tokenSent
    ? `Bearer realm="api", error="invalid_token", error_description="${message.replace(/"/g, "'")}"`
    : 'Bearer realm="api"';
  return new AppError(code, message, undefined, { 'www-authenticate': challenge });
}
