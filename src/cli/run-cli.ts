import { ConfigError } from '../platform/config.js';

/** A wrong command line: its message is the usage line, printed as it is. */
export class UsageError extends Error {}

/**
 * Runs a command's `main`: a bad setting or a wrong command line prints its one line; anything
 * else prints `<name> failed: <message>`. Either way the exit code is 1.
 */
export async function runCli(name: string, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof ConfigError || error instanceof UsageError;
    process.stderr.write(`${known ? message : `${name} failed: ${message}`}\n`);
    process.exitCode = 1;
  }
}
