/**
 * For the benchmark commands, which take no arguments but run for minutes: `--help` (or `-h`)
 * prints `usage` and exits 0 before anything is created, and any other argument is refused.
 */
export function exitOnHelp(usage: string): void {
  const args = process.argv.slice(2);
  if (args.length === 0) return;
  const help = args.every((arg) => arg === '--help' || arg === '-h');
  (help ? process.stdout : process.stderr).write(`${usage.trim()}\n`);
  process.exit(help ? 0 : 2);
}
