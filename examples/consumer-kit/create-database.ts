/* eslint-disable no-console -- an example program reports to its terminal */
// Creates the example's own database, the one DATABASE_URL names, unless it exists: no Postgres
// client needed on the host. It logs in with DATABASE_URL's login to the server's `postgres`
// database; the local stack's owner login (`bash scripts/stack.sh env`) may create databases.
import pg from 'pg';

const url = process.env.DATABASE_URL;
if (url === undefined || url === '') {
  console.error('DATABASE_URL is not set (README.md beside this file: eval the stack env first)');
  process.exit(1);
}
const target = new URL(url);
const name = decodeURIComponent(target.pathname.slice(1));
if (name === '') {
  console.error('DATABASE_URL names no database (postgres://user:password@host:port/<database>)');
  process.exit(1);
}
const maintenance = new URL(url);
maintenance.pathname = '/postgres';

const client = new pg.Client({
  connectionString: maintenance.href,
  connectionTimeoutMillis: 5_000,
});
await client.connect();
try {
  const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (found.rowCount === 0) {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
    console.log(`created database ${name}`);
  } else {
    console.log(`database ${name} exists`);
  }
} finally {
  await client.end();
}
