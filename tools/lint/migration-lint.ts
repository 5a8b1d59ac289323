import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { isNoTransaction, upSection } from '../../src/platform/database/migration-loader.js';

/** One squawk finding, placed in its file (1-based line). */
export interface LintFinding {
  file: string;
  line: number;
  rule: string;
  message: string;
}

export interface LintReport {
  /** Findings no exception covers: any one fails the lint. */
  violations: LintFinding[];
  /** Exceptions that match no finding any more ("file: rule"): they fail the lint too. */
  staleExceptions: string[];
  /** Findings covered by an exception. */
  excepted: number;
}

/** file name -> rule -> reason (squawk-exceptions.yaml). */
export type LintExceptions = Record<string, Record<string, string>>;

export interface LintOptions {
  root: string;
  exceptions?: LintExceptions;
  /** Bound on one squawk run (a file of a few hundred lines takes milliseconds). */
  timeoutMs?: number;
}

interface SquawkViolation {
  line: number;
  rule_name: string;
  message: string;
}

export function readExceptions(file: string): LintExceptions {
  const parsed = parse(readFileSync(file, 'utf8')) as unknown;
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object') throw new Error(`${file}: expected file -> rule -> reason`);
  return parsed as LintExceptions;
}

/** squawk on the up section of one migration file (down sections never run in production). */
function squawk(file: string, options: LintOptions): LintFinding[] {
  const text = readFileSync(file, 'utf8');
  const shown = path.relative(options.root, file);
  const result = spawnSync(
    path.join(options.root, 'node_modules/.bin/squawk'),
    [
      '--config',
      path.join(options.root, '.squawk.toml'),
      '--reporter',
      'json',
      '--stdin-filepath',
      shown,
      isNoTransaction(text) ? '--no-assume-in-transaction' : '--assume-in-transaction',
    ],
    { input: upSection(text), encoding: 'utf8', timeout: options.timeoutMs ?? 30_000 },
  );
  if (result.error) throw result.error;
  const output = result.stdout.trim();
  if (!output.startsWith('[')) {
    throw new Error(
      `squawk failed on ${shown} (status ${String(result.status)}): ${result.stderr}`,
    );
  }
  const findings = (JSON.parse(output) as SquawkViolation[]).map((v) => ({
    file: shown,
    line: v.line + 1,
    rule: v.rule_name,
    message: v.message,
  }));
  return [
    ...findings,
    ...concurrentlyInTransaction(text, shown),
    ...grantsOutsideGrantsFile(text, shown),
  ];
}

/**
 * The first migration after grants moved to src/platform/database/service-grants.ts (DESIGN
 * 116): the runner applies that list after every run, so older files' grants are overridden.
 */
export const FIRST_WITHOUT_GRANTS = '0031';

/**
 * This linter's own rule: from FIRST_WITHOUT_GRANTS on, a migration grants nothing (GRANT,
 * REVOKE, the old grant_service_roles()); a privilege is a line of service-grants.ts.
 */
function grantsOutsideGrantsFile(text: string, shown: string): LintFinding[] {
  if (path.basename(shown) < FIRST_WITHOUT_GRANTS) return [];
  return upSection(text)
    .split('\n')
    .flatMap((line, index) =>
      !/^\s*--/.test(line) &&
      (/^\s*(GRANT|REVOKE)\s/i.test(line) || /\bCALL\s+grant_service_roles\b/i.test(line))
        ? [
            {
              file: shown,
              line: index + 1,
              rule: 'grant-outside-grants-file',
              message:
                'grants live in src/platform/database/service-grants.ts, applied by the runner after every run: add the privilege there',
            },
          ]
        : [],
    );
}

/**
 * This linter's own rule (squawk cannot know the runner's marker): CONCURRENTLY in a migration
 * the runner wraps in a transaction, where Postgres refuses it.
 */
function concurrentlyInTransaction(text: string, shown: string): LintFinding[] {
  if (isNoTransaction(text)) return [];
  return upSection(text)
    .split('\n')
    .flatMap((line, index) =>
      !/^\s*--/.test(line) && /\bconcurrently\b/i.test(line)
        ? [
            {
              file: shown,
              line: index + 1,
              rule: 'concurrently-needs-no-transaction',
              message:
                'CONCURRENTLY cannot run in the transaction the runner wraps this file in: mark the file `-- migrate: no-transaction`',
            },
          ]
        : [],
    );
}

/** Lints `files` (paths) and sorts the findings into violations and excepted ones. */
export function lintMigrations(files: readonly string[], options: LintOptions): LintReport {
  const exceptions = options.exceptions ?? {};
  const used = new Set<string>();
  const violations: LintFinding[] = [];
  let excepted = 0;
  for (const file of files) {
    const name = path.basename(file);
    for (const finding of squawk(file, options)) {
      if (exceptions[name]?.[finding.rule] === undefined) violations.push(finding);
      else {
        excepted++;
        used.add(`${name}: ${finding.rule}`);
      }
    }
  }
  const linted = new Set(files.map((file) => path.basename(file)));
  const staleExceptions = Object.entries(exceptions)
    .filter(([name]) => linted.has(name))
    .flatMap(([name, rules]) => Object.keys(rules).map((rule) => `${name}: ${rule}`))
    .filter((entry) => !used.has(entry));
  return { violations, staleExceptions, excepted };
}

/** The report as lines for a terminal (gcc style), empty when the lint passed. */
export function formatLintReport(report: LintReport): string[] {
  return [
    ...report.violations.map((v) => `${v.file}:${String(v.line)}: ${v.rule}: ${v.message}`),
    ...report.staleExceptions.map(
      (entry) => `squawk-exceptions.yaml: "${entry}" matches no finding; remove it`,
    ),
  ];
}
