import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
/** Ids of this merchant's payments, oldest first. */
const created: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  ({ apiKey } = await api.merchant());
  for (let i = 0; i < 25; i++) {
    const res = await postPayment(api, { apiKey, body: { amount: 100 + i, currency: 'GBP' } });
    created.push(res.json.id as string);
  }
  // Same millisecond timestamps must not break the order: force a tie on three of them.
  await db.pool.query('UPDATE payments SET created_at = $1 WHERE id = ANY($2)', [
    new Date('2026-01-01T00:00:00.000Z'),
    created.slice(0, 3),
  ]);
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

describe('GET /payments/{id}', () => {
  it('when the payment is yours, then 200 with its current state', async () => {
    const res = await getJson(api, `/payments/${created[5] ?? ''}`, apiKey);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: created[5],
      object: 'payment',
      amount: 105,
      status: 'pending',
    });
    expect(res.json).not.toHaveProperty('failure_code');
  });

  it('when the payment failed, then failure_code is present', async () => {
    await db.pool.query(
      `UPDATE payments SET status = 'failed', failure_code = 'card_declined' WHERE id = $1`,
      [created[6]],
    );
    const res = await getJson(api, `/payments/${created[6] ?? ''}`, apiKey);
    expect(res.json).toMatchObject({ status: 'failed', failure_code: 'card_declined' });
  });
});

describe('GET /payments', () => {
  it('when paging with starting_after, then every payment appears once, newest first', async () => {
    const seen: string[] = [];
    let cursor = '';
    for (let page = 0; page < 10; page++) {
      const res = await getJson(api, `/payments?limit=10${cursor}`, apiKey);
      expect(res.status).toBe(200);
      expect(res.json.object).toBe('list');
      const data = res.json.data as { id: string }[];
      seen.push(...data.map((p) => p.id));
      if (!res.json.has_more) break;
      cursor = `&starting_after=${data[data.length - 1]?.id ?? ''}`;
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    // Newest first: the three tied at 2026-01-01 come last, ordered by id descending.
    expect(seen.slice(0, 22)).toEqual(created.slice(3).reverse());
    expect(seen.slice(22)).toEqual(created.slice(0, 3).sort().reverse());
  });

  it('when limit is left out, then 10 are returned with has_more', async () => {
    const res = await getJson(api, '/payments', apiKey);
    expect((res.json.data as unknown[]).length).toBe(10);
    expect(res.json.has_more).toBe(true);
  });

  it.each([['limit=0'], ['limit=101'], ['limit=abc'], ['starting_after=nope'], ['colour=red']])(
    'when the query is %s, then 400 validation_failed',
    async (query) => {
      const res = await getJson(api, `/payments?${query}`, apiKey);
      expect(res.status).toBe(400);
      expect(res.json.code).toBe('validation_failed');
    },
  );

  it("when starting_after is another merchant's payment, then 400 and nothing of theirs leaks", async () => {
    const other = await api.merchant('Other');
    const theirs = await postPayment(api, {
      apiKey: other.apiKey,
      body: { amount: 1, currency: 'EUR' },
    });
    const res = await getJson(api, `/payments?starting_after=${theirs.json.id as string}`, apiKey);
    expect(res.status).toBe(400);
    expect(res.json.errors).toEqual([{ path: 'starting_after', message: 'no such payment' }]);
  });
});
