// Owns the logger each request gets as `request.log`, and how a request is written into a log line.
// Fastify makes a pino child of the app's logger for every request, to add its reqId, whether or not
// anything is logged: ~4 % of a cached list request's CPU (docs/performance.md). This one makes that
// child only when a line is written at an enabled level, so with LOG_LEVEL=warn a request that logs
// nothing costs no child; every line written still carries the reqId. A request's URL is logged with
// the values of secret query parameters (a verify token, a token sent where none is read) redacted.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';

/**
 * Query parameters whose values are secrets, or may be: Meta's verify token, and credentials a
 * client puts in a URL although none is read there: a token is read from the Authorization header only. Compared by decoded name.
 */
const SECRET_PARAMS = new Set([
  'hub.verify_token',
  'token',
  'access_token',
  'api_key',
  'apikey',
  'key',
  'ticket',
  'signature',
  'secret',
  'password',
]);

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return raw.toLowerCase();
  }
}

/** A URL with the value of every secret query parameter replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const parts = url.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    if (SECRET_PARAMS.has(decodedName(name))) {
      parts[i] = `${name}=[redacted]`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q)}?${parts.join('&')}` : url;
}

/** pino's `req` serializer: Fastify's own fields, with the URL redacted. */
export function serializeRequest(request: FastifyRequest) {
  const version = request.headers?.['accept-version'];
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: Array.isArray(version) ? version[0] : version,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Bindings = Record<string, unknown>;
type Parent = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Parent,
    private readonly bindings: Bindings,
  ) {}

  private real(): FastifyBaseLogger {
    if (this.made === undefined) this.made = this.parent.child(this.bindings);
    return this.made;
  }

  private write(level: Level, args: unknown[]): void {
    const logger: Parent = this.made ?? this.parent;
    if (logger.isLevelEnabled?.(level) === false) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }

  isLevelEnabled(level: string): boolean {
    const logger: Parent = this.made ?? this.parent;
    return logger.isLevelEnabled?.(level) ?? true;
  }
}

/** Fastify's `childLoggerFactory`: a lazy child, or pino's own when the route sets logger options. */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  if (Object.keys(options).length > 0) return logger.child(bindings, options);
  return new RequestLogger(logger, bindings) as unknown as FastifyBaseLogger;
}
