import { connectInBackground } from '../lifecycle/connect-in-background.js';
import { isDatabaseUnavailable } from './db-errors.js';
import type { Queryable } from './db.js';
import type { Logger } from '../telemetry/logger.js';

/** What makes a database login too powerful for a service process, if anything. */
export interface LoginPrivileges {
  user: string;
  superuser: boolean;
  /** Tables of this schema the login owns (directly or through a role it is a member of). */
  ownedTables: string[];
}

export async function loginPrivileges(db: Queryable): Promise<LoginPrivileges> {
  const { rows } = await db.query<{ user: string; superuser: boolean; owned: string[] }>(
    `SELECT current_user AS user,
            (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
            ARRAY(SELECT tablename::text FROM pg_tables
                   WHERE schemaname = current_schema()
                     AND pg_has_role(current_user, tableowner, 'USAGE')
                   ORDER BY tablename) AS owned`,
  );
  const row = rows[0];
  if (!row) throw new Error('privilege query returned no row');
  return { user: row.user, superuser: row.superuser, ownedTables: row.owned };
}

export class PrivilegedLoginError extends Error {
  constructor(privileges: LoginPrivileges) {
    const what = privileges.superuser
      ? 'a superuser'
      : `the owner of ${privileges.ownedTables.slice(0, 3).join(', ')}`;
    super(
      `DATABASE_URL logs in as ${privileges.user}, ${what}: a service process could drop or ` +
        `rewrite any table. Use the process's own login (e.g. payments_api) or set ` +
        `DB_ALLOW_PRIVILEGED_LOGIN=true.`,
    );
    this.name = 'PrivilegedLoginError';
  }
}

/** Throws PrivilegedLoginError unless the login is neither a superuser nor a table owner. */
export async function assertUnprivilegedLogin(db: Queryable): Promise<void> {
  const privileges = await loginPrivileges(db);
  if (privileges.superuser || privileges.ownedTables.length > 0) {
    throw new PrivilegedLoginError(privileges);
  }
}

/**
 * The start-up guard of every service process: checks now, or, when Postgres is unreachable at
 * boot (processes start anyway and report not-ready), as soon as it answers. `refuse` is called
 * with the error when the login is privileged.
 */
export async function guardLogin(
  db: Queryable,
  logger: Logger,
  refuse: (error: PrivilegedLoginError) => void,
): Promise<() => void> {
  const check = async () => {
    try {
      await assertUnprivilegedLogin(db);
    } catch (error) {
      if (error instanceof PrivilegedLoginError) refuse(error);
      else throw error;
    }
  };
  try {
    await check();
    return () => undefined;
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    return connectInBackground('postgres login check', check, logger).stop;
  }
}
