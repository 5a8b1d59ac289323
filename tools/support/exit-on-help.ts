/**
 * For the benchmark commands, which run for minutes: `--help` (or `-h`) prints `usage` and
 * exits 0 before anything is created, and any argument not in `flags` is refused. Returns the
 * flags given.
 */
export function exitOnHelp(usage: string, flags: readonly string[] = []): Set<string> {
  const args = process.argv.slice(2);
  const help = args.length > 0 && args.every((arg) => arg === '--help' || arg === '-h');
  if (help || args.some((arg) => !flags.includes(arg))) {
    (help ? process.stdout : process.stderr).write(`${usage.trim()}\n`);
    process.exit(help ? 0 : 2);
  }
  return new Set(args);
}
