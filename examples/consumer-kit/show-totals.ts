/* eslint-disable no-console -- an example program reports to its terminal */
// Prints the example's table, settled_totals, from the database DATABASE_URL names: what
// `psql "$DATABASE_URL" -c 'SELECT * FROM settled_totals'` shows, without a Postgres client.
import pg from 'pg';

const client = new pg.Client({
  connectionString: process.env.DATABASE_URL,
  connectionTimeoutMillis: 5_000,
});
await client.connect();
try {
  const { rows } = await client.query<{ currency: string; amount: string; payments: number }>(
    'SELECT currency, amount, payments FROM settled_totals ORDER BY currency',
  );
  console.table(rows);
} finally {
  await client.end();
}
