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

export async function dropScratchDatabase(serverUrl: string, name: string): Promise<void> {
  // WITH (FORCE) run by a non-superuser fails with 42501 when an autovacuum worker happens to be
  // in the database (Postgres 15 checks the right to signal it like a user's backend). The
  // worker is done with a scratch database within moments: try again a few times.
  for (let attempt = 1; ; attempt++) {
    try {
      await withAdmin(serverUrl, (admin) =>
        admin.query(`DROP DATABASE IF EXISTS ${identifier(name)} WITH (FORCE)`),
      );
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== '42501' || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
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
