import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lintMigrations } from '../../tools/lint/migration-lint.js';
import {
  isNoTransaction,
  noTransactionStatements,
  upSection,
} from '../../src/platform/database/migration-loader.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/migrations');

function filesOf(dir: string): string[] {
  return readdirSync(path.join(FIXTURES, dir))
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => path.join(FIXTURES, dir, name));
}

/** Which rules fired, per file name. */
function rulesByFile(files: string[], exceptions = {}): Record<string, string[]> {
  const report = lintMigrations(files, { root: ROOT, exceptions });
  const rules: Record<string, string[]> = {};
  for (const v of report.violations) {
    const name = path.basename(v.file);
    rules[name] = [...(rules[name] ?? []), v.rule];
  }
  return rules;
}

describe('the migration linter (squawk via tools/lint/migration-lint.ts, `npm run lint`)', () => {
  it('when migrations lock a live table, then each is a violation naming its rule', () => {
    const rules = rulesByFile(filesOf('unsafe'));
    expect(Object.keys(rules)).toHaveLength(3);
    expect(rules['0001_index_without_concurrently.sql']).toEqual([
      'require-concurrent-index-creation',
    ]);
    expect(rules['0002_check_without_not_valid.sql']).toEqual(['constraint-missing-not-valid']);
    expect(rules['0003_concurrently_without_marker.sql']).toContain(
      'concurrently-needs-no-transaction',
    );
  });

  it('when a migration after the grants file grants, then it is a violation at that line', () => {
    const report = lintMigrations(filesOf('grants'), { root: ROOT });
    expect(report.violations.map((v) => [v.rule, v.line])).toEqual([
      ['grant-outside-grants-file', 6],
    ]);
  });

  it('when the migrations follow the rules (CONCURRENTLY, NOT VALID then VALIDATE), then none is a violation', () => {
    const report = lintMigrations(filesOf('under-load'), { root: ROOT });
    expect(report).toEqual({ violations: [], staleExceptions: [], excepted: 0 });
  });

  it('when an exception names the rule a file breaks, then it is excepted; one matching nothing is stale', () => {
    const report = lintMigrations(filesOf('unsafe').slice(0, 1), {
      root: ROOT,
      exceptions: {
        '0001_index_without_concurrently.sql': {
          'require-concurrent-index-creation': 'the test says so',
          'ban-drop-table': 'matches nothing',
        },
      },
    });
    expect(report).toEqual({
      violations: [],
      staleExceptions: ['0001_index_without_concurrently.sql: ban-drop-table'],
      excepted: 1,
    });
  });
});

describe('no-transaction migrations (src/platform/database/migration-loader.ts)', () => {
  const text = [
    '-- Up Migration',
    '-- migrate: no-transaction',
    '-- a comment; with a semicolon',
    'DROP INDEX CONCURRENTLY IF EXISTS i;',
    'CREATE INDEX CONCURRENTLY IF NOT EXISTS i',
    '  ON t (a);',
    '-- Down Migration',
    'DROP INDEX i;',
  ].join('\n');

  it('when a file carries the marker, then its up section is sent one statement at a time', () => {
    expect(isNoTransaction(text)).toBe(true);
    expect(upSection(text)).not.toContain('DROP INDEX i;');
    expect(noTransactionStatements(text, 'f')).toEqual([
      'DROP INDEX CONCURRENTLY IF EXISTS i',
      'CREATE INDEX CONCURRENTLY IF NOT EXISTS i\n  ON t (a)',
    ]);
  });

  it('when the marker is only in the down section or absent, then the file is transactional', () => {
    expect(
      isNoTransaction(
        '-- Up Migration\nSELECT 1;\n-- Down Migration\n-- migrate: no-transaction\n',
      ),
    ).toBe(false);
    expect(isNoTransaction('SELECT 1;')).toBe(false);
  });

  it('when a no-transaction file uses dollar quoting, then it is refused', () => {
    expect(() =>
      noTransactionStatements('-- migrate: no-transaction\nDO $$ BEGIN END $$;', 'f'),
    ).toThrow(/dollar quoting/);
  });
});
