import pg from 'pg';

/**
 * Databases made for one run (a test file, a benchmark) on the server the settings point at,
 * and dropped after it. The one place that issues CREATE DATABASE / DROP DATABASE: tests
 * (test/support) and tools (bench, bench:api, bench:relay) all come through here.
 */

export interface ScratchDatabase {
  name: string;
  /** `serverUrl` with this database's name. */
  url: string;
  /** DROP DATABASE ... WITH (FORCE): connections still open are cut. */
  drop: () => Promise<void>;
}

/** `url` (any database on a server) with its database name replaced by `name`. */
export function databaseUrlWithName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/**
 * Creates database `name` on the server of `serverUrl`: empty, or a copy of `template` (a
 * migrated template database). Names are interpolated into SQL, so only plain identifiers pass.
 */
export async function createScratchDatabase(
  serverUrl: string,
  name: string,
  { template }: { template?: string } = {},
): Promise<ScratchDatabase> {
  const from = template === undefined ? '' : ` TEMPLATE ${identifier(template)}`;
  await withAdmin(serverUrl, (admin) => admin.query(`CREATE DATABASE ${identifier(name)}${from}`));
  return {
    name,
    url: databaseUrlWithName(serverUrl, name),
    drop: () => dropScratchDatabase(serverUrl, name),
  };
}

/** How long a drop waits for the database's sessions to end and retries a refused FORCE. */
const DROP_PATIENCE_MS = 60_000;

export async function dropScratchDatabase(serverUrl: string, name: string): Promise<void> {
  // WITH (FORCE) run by the owner (not a superuser) fails with 42501 while a session of another
  // login is still in the database: a role process of a bench step still exiting (its pool
  // closes with it), or an autovacuum worker. Postgres 15 checks the right to signal those
  // backends like a user's. Such sessions end on their own within moments, a heavy bench step's
  // processes within seconds: wait for them, then drop, and retry a refusal for up to a minute
  // (a 2 s retry once lost a whole `npm run bench`, issue 29).
  const deadline = Date.now() + DROP_PATIENCE_MS;
  await withAdmin(serverUrl, (admin) => waitForOtherSessions(admin, name, deadline));
  for (;;) {
    try {
      await withAdmin(serverUrl, (admin) =>
        admin.query(`DROP DATABASE IF EXISTS ${identifier(name)} WITH (FORCE)`),
      );
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== '42501' || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * For finally blocks of tools whose figures are already measured: a drop that still fails is
 * reported (the database is left for the next run's cleanup) instead of discarding the results.
 */
export async function dropScratchDatabaseOrReport(
  scratch: Pick<ScratchDatabase, 'name' | 'drop'>,
  report: (line: string) => void,
): Promise<void> {
  try {
    await scratch.drop();
  } catch (error) {
    report(
      `could not drop scratch database ${scratch.name} (left behind, drop it by hand): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** Waits (until `deadline`) while sessions other than this one are connected to `name`. */
async function waitForOtherSessions(
  admin: pg.Client,
  name: string,
  deadline: number,
): Promise<void> {
  while (Date.now() < deadline) {
    const { rows } = await admin.query<{ sessions: number }>(
      `SELECT count(*)::int AS sessions FROM pg_stat_activity
        WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      [name],
    );
    if ((rows[0]?.sessions ?? 0) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Drops every database whose name starts with `prefix` (a test run's leftovers). */
export async function dropScratchDatabasesWithPrefix(
  serverUrl: string,
  prefix: string,
): Promise<void> {
  const names = await withAdmin(serverUrl, async (admin) => {
    const { rows } = await admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
      [prefix],
    );
    return rows.map((row) => row.datname);
  });
  for (const name of names) await dropScratchDatabase(serverUrl, name);
}

function identifier(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  return name;
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}
