import type { MigrationBuilder } from 'node-pg-migrate';
import type { Logger } from '../telemetry/logger.js';

/**
 * A CREATE INDEX CONCURRENTLY that fails part-way (lock_timeout, a unique violation, a killed
 * primary) leaves its index INVALID: present, maintained on every write, never used. `IF NOT
 * EXISTS` would skip it on the next run and the file would be recorded as applied. So before a
 * no-transaction file runs, what it creates and is invalid is dropped (logged), and after it
 * ran, it is recorded only if every index it creates is valid (DESIGN 125).
 */

/** CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS] [schema.]name: the name, as Postgres folds it. */
const CREATE_INDEX =
  /^\s*create\s+(?:unique\s+)?index\s+(?:concurrently\s+)?(?:if\s+not\s+exists\s+)?(?:(?:"[^"]+"|\w+)\s*\.\s*)?("(?:[^"]|"")+"|\w+)/i;

/** The names of the indexes these statements create (an unnamed CREATE INDEX has none). */
export function createdIndexNames(statements: readonly string[]): string[] {
  const names = statements.flatMap((statement) => {
    const name = CREATE_INDEX.exec(statement)?.[1];
    if (name === undefined || /^on$/i.test(name)) return [];
    return [name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name.toLowerCase()];
  });
  return [...new Set(names)];
}

/** Invalid indexes named `names` in the schemas the session resolves unqualified names in. */
const FIND_INVALID = `
  SELECT n.nspname AS schema, c.relname AS index
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE NOT i.indisvalid AND c.relname = ANY ($1::text[])
     AND n.nspname = ANY (current_schemas(false))`;

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * Drops (CONCURRENTLY, outside any transaction) each invalid index among `names`, one log line
 * each. Runs at once on the migration's session, before the file's statements are sent; the
 * session's lock_timeout must already be set (a 55P03 here is retried like the file's own).
 */
export async function dropInvalidIndexes(
  db: MigrationBuilder['db'],
  names: readonly string[],
  migration: string,
  logger: Pick<Logger, 'warn'>,
): Promise<void> {
  if (names.length === 0) return;
  const invalid = (await db.select(FIND_INVALID, [names])) as { schema: string; index: string }[];
  for (const { schema, index } of invalid) {
    logger.warn(
      { migration, index, schema },
      'dropping an INVALID index a failed run of this migration left behind; the migration builds it again',
    );
    await db.query(`DROP INDEX CONCURRENTLY IF EXISTS ${quoteIdent(schema)}.${quoteIdent(index)}`);
  }
}

/**
 * A statement that fails (SQLSTATE 55000, object_not_in_prerequisite_state) when any index
 * among `names` is invalid: sent after the file's statements and before node-pg-migrate
 * records the file, so a file whose index is invalid is never recorded.
 */
export function refuseInvalidIndexesSql(names: readonly string[], migration: string): string {
  const list = names.map(quoteLiteral).join(', ');
  const message = `${migration} left INVALID index(es) %s: not recorded as applied; migrate again to rebuild them (DESIGN 125)`;
  return `DO $refuse_invalid$
DECLARE invalid text;
BEGIN
  SELECT string_agg(c.relname, ', ') INTO invalid
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE NOT i.indisvalid AND c.relname IN (${list})
     AND n.nspname = ANY (current_schemas(false));
  IF invalid IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = '55000', MESSAGE = format(${quoteLiteral(message)}, invalid);
  END IF;
END
$refuse_invalid$`;
}
