import { PG_MIGRATE_LOCK_ID } from 'node-pg-migrate';
import pg from 'pg';
import type { Logger } from '../telemetry/logger.js';
import type { MigrationLimits } from './migration-loader.js';
import { SERVICE_GRANTS, type LoginGrants } from './service-grants.js';

/** What the statements depend on besides the list: where, and who owns the books (0026). */
export interface GrantContext {
  schema: string;
  /** acquirer_books_login has its row: settlement's grants on the books are left out. */
  booksOwnLogin: boolean;
}

/**
 * One login's statements: everything on the schema taken away (table privileges take their
 * column privileges with them), then exactly the list. Run inside one transaction, so a
 * concurrent statement sees either the old grants or the new ones, never none.
 */
export function loginGrantStatements(entry: LoginGrants, context: GrantContext): string[] {
  const login = pg.escapeIdentifier(entry.login);
  const schema = pg.escapeIdentifier(context.schema);
  const statements = [
    `REVOKE ALL ON ALL TABLES IN SCHEMA ${schema} FROM ${login}`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${schema} FROM ${login}`,
    `REVOKE ALL ON ALL ROUTINES IN SCHEMA ${schema} FROM ${login}`,
    `REVOKE ALL ON SCHEMA ${schema} FROM ${login}`,
    `GRANT USAGE ON SCHEMA ${schema} TO ${login}`,
  ];
  for (const grant of entry.grants) {
    if (grant.whileBooksShared && context.booksOwnLogin) continue;
    const columns = grant.columns
      ? ` (${grant.columns.map((column) => pg.escapeIdentifier(column)).join(', ')})`
      : '';
    const privileges = grant.privileges.map((privilege) => `${privilege}${columns}`).join(', ');
    const tables = grant.tables.map((table) => `${schema}.${pg.escapeIdentifier(table)}`);
    statements.push(`GRANT ${privileges} ON ${tables.join(', ')} TO ${login}`);
  }
  return statements;
}

export interface AppliedGrants {
  /** Logins granted their list. */
  granted: string[];
  /** Logins of the list that do not exist on this cluster (created later: migrate again). */
  missing: string[];
}

/**
 * Applies SERVICE_GRANTS on `client` (the migration login, owner of the tables) in one
 * transaction holding the migrations' advisory lock (transaction-scoped: two migrators, or a
 * migrator and this step, take turns) under the migrations' lock and statement timeouts.
 * Idempotent: the same list gives the same privileges however often it runs.
 */
export async function applyServiceGrants(
  client: pg.ClientBase,
  limits: MigrationLimits,
  logger: Logger,
  list: readonly LoginGrants[] = SERVICE_GRANTS,
): Promise<AppliedGrants> {
  await client.query('BEGIN');
  try {
    // The wait for another migrator is not bounded by lock_timeout (set after it), as for a migration.
    await client.query(`SELECT pg_advisory_xact_lock(${String(PG_MIGRATE_LOCK_ID)})`);
    await client.query(`SET LOCAL lock_timeout = '${String(limits.lockTimeoutMs)}ms'`);
    await client.query(`SET LOCAL statement_timeout = '${String(limits.statementTimeoutMs)}ms'`);
    const { rows } = await client.query<{ schema: string; present: string[]; own: boolean }>(
      `SELECT current_schema() AS schema,
              ARRAY(SELECT rolname::text FROM pg_roles WHERE rolname = ANY($1::text[])) AS present,
              EXISTS (SELECT FROM acquirer_books_login) AS own`,
      [list.map((entry) => entry.login)],
    );
    const row = rows[0];
    if (!row) throw new Error('grant context query returned no row');
    const context: GrantContext = { schema: row.schema, booksOwnLogin: row.own };
    const present = list.filter((entry) => row.present.includes(entry.login));
    const statements = present.flatMap((entry) => loginGrantStatements(entry, context));
    if (statements.length > 0) await client.query(statements.join(';\n'));
    await client.query('COMMIT');
    const granted = present.map((entry) => entry.login);
    const missing = list.map((entry) => entry.login).filter((login) => !granted.includes(login));
    for (const login of missing) {
      logger.warn({ login }, 'login does not exist: no grants (create it, then migrate again)');
    }
    logger.debug({ granted }, 'service grants applied');
    return { granted, missing };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
