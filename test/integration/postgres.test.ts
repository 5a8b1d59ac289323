import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/platform/database/db.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

async function insertMerchant(client: { query: TestDatabase['pool']['query'] }, name: string) {
  const id = randomUUID();
  await client.query(`INSERT INTO merchants (id, name) VALUES ($1, $2)`, [id, name]);
  return id;
}

describe('postgres (real server, per-file database)', () => {
  it('when a file gets its database, then it is migrated and empty', async () => {
    const { rows } = await db.pool.query<{ count: string }>('SELECT count(*) FROM merchants');
    expect(rows[0]?.count).toBe('0');
    const applied = await db.pool.query<{ name: string }>('SELECT name FROM pgmigrations');
    expect(applied.rows.map((r) => r.name)).toContain('0001_merchants');
  });

  it('when a transaction commits, then its row is read back', async () => {
    const id = await withTransaction(db.pool, (client) => insertMerchant(client, 'committed'));
    const { rows } = await db.pool.query<{ name: string }>(
      'SELECT name FROM merchants WHERE id = $1',
      [id],
    );
    expect(rows).toEqual([{ name: 'committed' }]);
  });

  it('when the transaction callback throws, then nothing it wrote remains', async () => {
    let written: string | undefined;
    await expect(
      withTransaction(db.pool, async (client) => {
        written = await insertMerchant(client, 'rolled back');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(written).toBeDefined();
    const { rowCount } = await db.pool.query('SELECT 1 FROM merchants WHERE id = $1', [written]);
    expect(rowCount).toBe(0);
  });
});
