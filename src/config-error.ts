// Owns the error every part of the configuration throws for a bad or missing variable, so the
// parsers of each part (config.ts, config-channels.ts, config-secret.ts) share it without
// importing each other.

/** Thrown for a bad or missing variable; start-up prints its message on one line and exits 1. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}
