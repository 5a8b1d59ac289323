/**
 * A bad setting: the process prints the message as its one line and exits 1. Its own module so
 * the tracing preload can raise it without loading the configuration schema.
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly problem: string,
  ) {
    super(`invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}
