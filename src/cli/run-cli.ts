import { ConfigError } from '../platform/config.js';

/** A wrong command line: its message is the usage line, printed as it is. */
export class UsageError extends Error {}

/**
 * Runs a command's `main`: a bad setting or a wrong command line prints its one line; anything
 * else prints `<name> failed: <message>`. Either way the exit code is 1. `--help` (or `-h`)
 * anywhere on the command line prints `usage` and exits 0 before `main` connects to anything.
 */
export async function runCli(
  name: string,
  usage: string,
  main: () => Promise<void>,
): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  try {
    await main();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof ConfigError || error instanceof UsageError;
    process.stderr.write(`${known ? message : `${name} failed: ${message}`}\n`);
    process.exitCode = 1;
  }
}
