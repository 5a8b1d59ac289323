import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { quantile, report, steadyLoad, summarize } from '../support/steady-load.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { countWrites, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Redis frozen (accepts, never answers: SIGSTOP, a failover) under a steady load of new
 * payments: the command timeout and the breaker keep every request fast, on the database path.
 */
/** GRAY_REDIS_FREEZE_MS=10000 GRAY_RATE=100 reproduces the Done-when figures. */
const FREEZE_MS = Number(process.env.GRAY_REDIS_FREEZE_MS ?? 4_000);
const RATE = Number(process.env.GRAY_RATE ?? 40);
let db: TestDatabase;
let proxy: TcpProxy;
let api: TestApi;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const { redisUrl } = (await import('vitest')).inject('services');
  const url = new URL(redisUrl);
  proxy = await startTcpProxy(url.hostname, Number(url.port || 6379));
  url.port = String(proxy.port);
  // A generous checkout bound: on a loaded machine the pool, not Redis, would answer 503.
  api = await startTestApi(db, { REDIS_URL: url.toString(), DATABASE_CONNECT_TIMEOUT_MS: '10000' });
  await defineTier(db.pool, BENCH_TIER);
  // A wide tier: the replays after the load would otherwise exceed the default tier's burst.
  ({ apiKey } = await api.merchant('Gray', BENCH_TIER.name));
});
afterAll(async () => {
  proxy.thaw();
  await api.close();
  await proxy.close();
  await db.drop();
});

describe('redis frozen mid-load', () => {
  it('when Redis freezes for 4 s under 40 new payments/s, then every POST is 202 (p99 <= 1 s, max <= 2.5 s over the unfrozen baseline) and each key replays its own payment after', async () => {
    // Warm-up: the API key lookup and the pool's connections, so the baseline is steady.
    for (let i = 0; i < 10; i++) await postPayment(api, { apiKey, key: `warm-${i}` });
    const loading = steadyLoad(api, apiKey, {
      ratePerSecond: RATE,
      durationMs: FREEZE_MS + 4_000,
      keyPrefix: 'redis-freeze',
    });
    await new Promise((r) => setTimeout(r, 2_000));
    proxy.freeze();
    await new Promise((r) => setTimeout(r, FREEZE_MS));
    proxy.thaw();
    const results = await loading;
    const baseline = results.filter((r) => r.sentAtMs < 2_000);
    const affected = results.filter((r) => r.sentAtMs >= 2_000);
    report(summarize('baseline (redis up)', baseline));
    report(summarize(`redis frozen ${FREEZE_MS} ms at ${RATE}/s, then thawed`, affected));

    expect(results.filter((r) => r.answer.status !== 202)).toEqual([]);
    // The bounds, on top of what this (possibly loaded, 2-core) machine needs anyway:
    // without the command timeout every request sent during the freeze waits the whole 4 s.
    const machine = quantile(
      baseline.map((r) => r.latencyMs),
      0.99,
    );
    const latencies = affected.map((r) => r.latencyMs);
    expect(quantile(latencies, 0.99)).toBeLessThanOrEqual(1_000 + machine);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(2_500 + machine);

    // Exactly once: one payment per key, and each key's retry replays its own payment.
    expect((await countWrites(db)).payments).toBe(results.length + 10);
    for (const { key, body, answer } of results) {
      const replay = await postPayment(api, { apiKey, key, body });
      expect(replay.status).toBe(202);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.json.id).toBe(answer.json.id);
    }
  }, 120_000);
});
