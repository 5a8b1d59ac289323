import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsShed } from '../../src/http/admission-limit.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { countWrites, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

/** HTTP_MAX_IN_FLIGHT: a process at its limit answers 503 at once and writes nothing. */
let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let hold: Promise<void> | null = null;
let waiting = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(
    db,
    { HTTP_MAX_IN_FLIGHT: '4' },
    {
      beforeWrite: async () => {
        if (!hold) return;
        waiting++;
        await hold;
      },
    },
  );
  ({ apiKey } = await api.merchant());
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

async function shedCount(): Promise<number> {
  return (await requestsShed.get()).values[0]?.value ?? 0;
}

describe('admission limit', () => {
  it('when four requests are in flight, then a fifth gets 503 problem+json with Retry-After at once and writes nothing, health stays 200, and its retry succeeds once there is room', async () => {
    let open!: () => void;
    hold = new Promise<void>((resolve) => (open = resolve));
    const shedBefore = await shedCount();
    const held = Array.from({ length: 4 }, () => postPayment(api, { apiKey }));
    // All four are inside: each has written nothing yet and waits in beforeWrite.
    while (waiting < 4) await new Promise((r) => setTimeout(r, 10));

    const key = crypto.randomUUID();
    const started = performance.now();
    const refused = await postPayment(api, { apiKey, key });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.json).toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(await shedCount()).toBe(shedBefore + 1);
    expect(await countWrites(db)).toEqual({ payments: 0, keys: 0, outbox: 0 });
    const health = await fetch(api.url('/healthz'));
    expect(health.status).toBe(200);

    hold = null;
    open();
    expect((await Promise.all(held)).map((a) => a.status)).toEqual([202, 202, 202, 202]);
    const retried = await postPayment(api, { apiKey, key });
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await countWrites(db)).toEqual({ payments: 5, keys: 5, outbox: 5 });
  });
});
