// Owns the logger each request gets as `request.log`. Fastify makes a pino child of the app's
// logger for every request, to add its reqId, whether or not anything is logged: ~4 % of a cached
// list request's CPU (docs/performance.md). This one makes that child only when a line is written
// at an enabled level, so with LOG_LEVEL=warn a request that logs nothing costs no child; every
// line written still carries the reqId. It also owns how a request is written in a log line: as
// Fastify writes it, but with a stream ticket in the URL redacted (a ticket is a credential).
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';

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

/** A `ticket=` query parameter's value (stream tickets: src/modules/events/tickets.ts). */
const TICKET_PARAM = /([?&]ticket=)[^&#]*/gi;

/** `url` with the value of each `ticket` query parameter replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  return url.replace(TICKET_PARAM, '$1[redacted]');
}

/** The `req` serializer of every log line (run only for a line written): Fastify's own fields, the URL redacted. */
export function requestSerializer(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: request.headers?.['accept-version'] as string | undefined,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
