import { readdirSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../chaos/repo-root.js';
import { formatLintReport, lintMigrations, readExceptions } from '../lint/migration-lint.js';

/**
 * `npm run lint:migrations` (part of `npm run lint`): squawk on every migration's up section,
 * with .squawk.toml and the per-file exceptions of squawk-exceptions.yaml. Exit 1 on a
 * violation or a stale exception (docs/development.md "Writing a migration").
 */
const root = repoRoot();
const dir = path.join(root, 'migrations');
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.sql'))
  .sort()
  .map((name) => path.join(dir, name));
const report = lintMigrations(files, {
  root,
  exceptions: readExceptions(path.join(root, 'squawk-exceptions.yaml')),
});
const lines = formatLintReport(report);
for (const line of lines) process.stderr.write(`${line}\n`);
process.stdout.write(
  `migration lint: ${String(files.length)} files, ${String(report.violations.length)} violations, ${String(report.excepted)} excepted, ${String(report.staleExceptions.length)} stale exceptions\n`,
);
process.exitCode = lines.length > 0 ? 1 : 0;
