import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { MigrationBuilder, runner } from 'node-pg-migrate';
import type { Logger } from '../telemetry/logger.js';
import {
  createdIndexNames,
  dropInvalidIndexes,
  refuseInvalidIndexesSql,
} from './invalid-indexes.js';

type LoaderStrategy = NonNullable<
  Parameters<typeof runner>[0]['migrationLoaderStrategies']
>[number];
/** node-pg-migrate's loader type (not exported by name): file paths in, migration units out. */
export type MigrationLoader = Exclude<LoaderStrategy['loader'], string>;

/**
 * A line that makes a migration run outside any transaction, one statement at a time (what
 * CREATE/DROP INDEX CONCURRENTLY need): `-- migrate: no-transaction`. node-pg-migrate's own SQL
 * loader has no such marker (only JS migrations can call pgm.noTransaction()), so this loader
 * reads it.
 */
export const NO_TRANSACTION_MARKER = /^--\s*migrate:\s*no-transaction\s*$/m;
const DOWN_MIGRATION = /^\s*--[\s-]*down\s+migration/im;

/** The limits set for each migration alone (docs/development.md "Writing a migration"). */
export interface MigrationLimits {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
}

/** The forward part of a migration file: what comes before its `-- Down Migration` line. */
export function upSection(text: string): string {
  const down = text.search(DOWN_MIGRATION);
  return down < 0 ? text : text.slice(0, down);
}

export function isNoTransaction(text: string): boolean {
  return NO_TRANSACTION_MARKER.test(upSection(text));
}

/**
 * The statements of a no-transaction migration, each sent on its own: Postgres runs a
 * multi-statement string as one implicit transaction, where CONCURRENTLY is refused. Split at a
 * `;` that ends a line; dollar quoting (function bodies) is refused here, since such a body
 * belongs in a transactional migration anyway.
 */
export function noTransactionStatements(text: string, file: string): string[] {
  const code = upSection(text)
    .split('\n')
    .filter((line) => !/^\s*--/.test(line))
    .join('\n');
  if (/\$[A-Za-z_]*\$/.test(code)) {
    throw new Error(`${file}: a no-transaction migration cannot use dollar quoting`);
  }
  return code
    .split(/;[ \t]*$/m)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
}

async function applyUp(
  pgm: MigrationBuilder,
  text: string,
  file: string,
  limits: MigrationLimits,
  logger: Pick<Logger, 'warn'>,
): Promise<void> {
  const limitsSql = (set: 'SET' | 'SET LOCAL') => [
    `${set} lock_timeout = '${String(limits.lockTimeoutMs)}ms'`,
    `${set} statement_timeout = '${String(limits.statementTimeoutMs)}ms'`,
  ];
  if (!isNoTransaction(text)) {
    // SET LOCAL: the limits end with this migration's transaction, so they never bound the
    // advisory-lock wait that makes a second migrator wait for the first.
    for (const sql of limitsSql('SET LOCAL')) pgm.sql(sql);
    pgm.sql(upSection(text));
    return;
  }
  pgm.noTransaction();
  const statements = noTransactionStatements(text, file);
  const indexes = createdIndexNames(statements);
  if (indexes.length > 0) {
    // At once, before the file's statements are even queued: what an earlier, failed run of this
    // file left INVALID goes, so IF NOT EXISTS cannot keep it (DESIGN 125).
    for (const sql of limitsSql('SET')) await pgm.db.query(sql);
    await dropInvalidIndexes(pgm.db, indexes, file, logger);
  }
  for (const sql of limitsSql('SET')) pgm.sql(sql);
  for (const sql of statements) pgm.sql(sql);
  // Last before node-pg-migrate records the file: never recorded with an invalid index.
  if (indexes.length > 0) pgm.sql(refuseInvalidIndexesSql(indexes, file));
  pgm.sql('RESET lock_timeout');
  pgm.sql('RESET statement_timeout');
}

/**
 * Loads migrations/*.sql as node-pg-migrate's SQL loader does (up before `-- Down Migration`),
 * adding per-migration limits and the no-transaction marker. `onStart` hears each migration's
 * name as it begins, so a failure can be attributed to its migration; `logger` hears the invalid
 * indexes dropped before a no-transaction file runs again.
 */
export function createSqlLoader(
  limits: MigrationLimits,
  onStart: (name: string) => void,
  logger: Pick<Logger, 'warn'>,
): MigrationLoader {
  return async (filePaths) =>
    Promise.all(
      filePaths.map(async (filePath) => {
        const text = await readFile(filePath, 'utf8');
        const name = path.basename(filePath, '.sql');
        if (isNoTransaction(text)) noTransactionStatements(text, name); // refuse it at load time
        const down = text.search(DOWN_MIGRATION);
        return {
          id: filePath,
          filePaths: [filePath],
          actions: {
            up: async (pgm: MigrationBuilder) => {
              onStart(name);
              await applyUp(pgm, text, name, limits, logger);
            },
            down:
              down < 0
                ? (false as const)
                : (pgm: MigrationBuilder) => {
                    pgm.sql(text.slice(down));
                  },
          },
        };
      }),
    );
}
