import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Answer, Request } from '../../k6/scenarios/careful-client.js';
import { SCENARIOS } from '../../k6/scenarios/index.js';
import type { Scenario } from '../../k6/scenarios/shape.js';
import type { Transport } from '../../tools/load/http-transport.js';
import { LoadMetrics } from '../../tools/load/load-metrics.js';
import { runScenario } from '../../tools/load/run-scenario.js';
import { judgeThresholds } from '../../tools/load/thresholds.js';

/**
 * A fake API in memory (pure logic, no service): POST /payments answers 202 once per (merchant,
 * key) and replays that answer byte for byte, 422 for the same key with another body; GET reads
 * the merchant's own payments. `duplicate` breaks it as the reference implementation was broken:
 * every POST creates a new payment.
 */
function fakeApi(options: { duplicate?: boolean; delayMs?: number } = {}): Transport & {
  sent: number;
} {
  const byKey = new Map<string, { body: string; answer: string }>();
  const payments = new Map<string, string>();
  let ids = 0;
  const api = {
    sent: 0,
    send: async (request: Request): Promise<Answer> => {
      api.sent++;
      await sleep(options.delayMs ?? 0);
      const merchant = request.headers.Authorization ?? '';
      const ok = (status: number, body: string, replayed = false): Answer => ({
        status,
        body,
        retryAfter: null,
        replayed,
        error: '',
      });
      if (request.method === 'GET') {
        const owner = payments.get(request.path);
        return owner === merchant ? ok(200, '{"id":"x"}') : ok(404, '{"code":"not_found"}');
      }
      const key = `${merchant} ${request.headers['Idempotency-Key'] ?? ''}`;
      const seen = byKey.get(key);
      if (seen && !options.duplicate) {
        if (canonical(seen.body) !== canonical(request.body ?? '')) {
          return ok(422, '{"code":"idempotency_key_reused"}');
        }
        return ok(202, seen.answer, true);
      }
      const id = `p${++ids}`;
      const answer = JSON.stringify({ id, ...(JSON.parse(request.body ?? '{}') as object) });
      byKey.set(key, { body: request.body ?? '', answer });
      payments.set(`/payments/${id}`, merchant);
      return ok(202, answer);
    },
    close: () => Promise.resolve(),
  };
  return api;
}

/** Key order and whitespace do not matter, as in the API's fingerprint. */
function canonical(body: string): string {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  return JSON.stringify(
    Object.fromEntries(Object.entries(parsed).sort(([a], [b]) => a.localeCompare(b))),
  );
}

async function run(
  scenario: Scenario<unknown, unknown>,
  env: Record<string, string>,
  transport: Transport,
  stop = new AbortController().signal,
) {
  const metrics = new LoadMetrics();
  const errors: unknown[] = [];
  const outcome = await runScenario({
    scenario,
    env: { API_KEYS: 'sk_a,sk_b', ...env },
    runId: 'test',
    transport,
    metrics,
    stop,
    onError: (error) => errors.push(error),
  });
  const thresholds = judgeThresholds(
    scenario.thresholds(scenario.settings({ API_KEYS: 'sk_a,sk_b', ...env })),
    metrics,
  );
  return { outcome, metrics, errors, broken: thresholds.filter((t) => !t.ok) };
}

const fast = { P95_MS: '100000', P99_MS: '100000' };

describe('the load driver runs a scenario as k6 would', () => {
  it('when the API keeps one payment per key, then a storm of 30 keys x 5 copies holds every threshold', async () => {
    const api = fakeApi();
    const { metrics, errors, broken, outcome } = await run(
      SCENARIOS.storm as Scenario<unknown, unknown>,
      { KEYS: '30', COPIES: '5', VUS: '4', ...fast },
      api,
    );
    expect(errors).toEqual([]);
    expect(broken).toEqual([]);
    expect(api.sent).toBe(150);
    expect(metrics.counters.get('storm_keys')).toBe(30);
    expect(outcome).toMatchObject({ interrupted: false, timedOut: false });
  });

  it('when the API charges every copy (no idempotency), then the storm breaks storm_created_twice and storm_id_mismatch on every key', async () => {
    const { broken, metrics } = await run(
      SCENARIOS.storm as Scenario<unknown, unknown>,
      { KEYS: '10', COPIES: '3', VUS: '2', ...fast },
      fakeApi({ duplicate: true }),
    );
    expect(metrics.counters.get('storm_created_twice')).toBe(10);
    expect(metrics.counters.get('storm_id_mismatch')).toBe(10);
    expect(broken.map((t) => t.metric)).toEqual(
      expect.arrayContaining(['storm_created_twice', 'storm_id_mismatch', 'storm_body_mismatch']),
    );
  });

  it('when the API answers reused keys with 422, then mismatch and cross-merchant hold; when it ignores the merchant, cross-merchant breaks', async () => {
    expect(
      (
        await run(
          SCENARIOS.mismatch as Scenario<unknown, unknown>,
          { KEYS: '8', ...fast },
          fakeApi(),
        )
      ).broken,
    ).toEqual([]);
    expect(
      (
        await run(
          SCENARIOS['cross-merchant'] as Scenario<unknown, unknown>,
          { KEYS: '8', ...fast },
          fakeApi(),
        )
      ).broken,
    ).toEqual([]);
    const shared = fakeApi();
    const merchantBlind: Transport = {
      send: (request, stop) =>
        shared.send(
          { ...request, headers: { ...request.headers, Authorization: 'one merchant' } },
          stop,
        ),
      close: shared.close,
    };
    const { broken } = await run(
      SCENARIOS['cross-merchant'] as Scenario<unknown, unknown>,
      { KEYS: '4', ...fast },
      merchantBlind,
    );
    expect(broken.map((t) => t.metric)).toContain('cross_merchant_collision');
  });

  it('when MAX_DURATION runs out before the keys are done, then the run stops there and the keys threshold fails', async () => {
    const { outcome, broken, metrics } = await run(
      SCENARIOS.storm as Scenario<unknown, unknown>,
      { KEYS: '1000', COPIES: '1', VUS: '1', MAX_DURATION: '300ms', ...fast },
      fakeApi({ delayMs: 20 }),
    );
    expect(outcome.timedOut).toBe(true);
    expect(outcome.seconds).toBeLessThan(5);
    expect(metrics.counters.get('storm_keys')).toBeLessThan(1000);
    expect(broken.map((t) => t.metric)).toEqual(['storm_keys']);
  });

  it('when an arrival finds every VU busy, then it is dropped and counted, and the open model keeps its schedule', async () => {
    const { metrics, broken } = await run(
      SCENARIOS['new-payments'] as Scenario<unknown, unknown>,
      { RATE: '200', DURATION: '1s', VUS: '1', P99_MS: '100000' },
      fakeApi({ delayMs: 100 }),
    );
    // One VU at most 4 in flight (maxVUs = 4 x VUS), each busy 100 ms: about 40 of 200 run.
    expect(metrics.droppedIterations).toBeGreaterThan(100);
    expect(metrics.iterations + metrics.droppedIterations).toBe(200);
    expect(broken.map((t) => t.metric)).toEqual(['dropped_iterations']);
  });

  it('when the run is stopped (SIGINT), then it ends within moments, keys left unstarted', async () => {
    const stop = new AbortController();
    setTimeout(() => {
      stop.abort();
    }, 200);
    const started = performance.now();
    const { outcome, metrics, errors } = await run(
      SCENARIOS.storm as Scenario<unknown, unknown>,
      { KEYS: '100000', COPIES: '2', VUS: '4', ...fast },
      fakeApi({ delayMs: 50 }),
      stop.signal,
    );
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(outcome.interrupted).toBe(true);
    expect(metrics.counters.get('storm_keys')).toBeLessThan(1000);
    expect(metrics.counters.get('storm_created_twice')).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe('stopping a run', () => {
  it('when iterations are waiting to retry (409, Retry-After: 10) and the run is stopped, then they end at once, cut short and not judged', async () => {
    const busy: Transport = {
      send: () =>
        Promise.resolve({ status: 409, body: '{}', retryAfter: '10', replayed: false, error: '' }),
      close: () => Promise.resolve(),
    };
    const stop = new AbortController();
    setTimeout(() => {
      stop.abort();
    }, 100);
    const started = performance.now();
    const { metrics, errors } = await run(
      SCENARIOS.storm as Scenario<unknown, unknown>,
      { KEYS: '10', COPIES: '2', VUS: '3', ...fast },
      busy,
      stop.signal,
    );
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(metrics.interruptedIterations).toBe(3);
    expect(metrics.counters.get('storm_keys')).toBe(0);
    expect(metrics.counters.get('storm_keys_without_payment')).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe('thresholds', () => {
  it("when a rule is k6's syntax it is judged on the driver's metrics; a rule or counter it cannot read is an error, never a pass", () => {
    const metrics = new LoadMetrics();
    metrics.declare('broken_things');
    metrics.add('broken_things', 2, { status: '400' });
    for (const ms of [1, 2, 3, 4, 100]) metrics.request('POST /payments', ms);
    metrics.check('ok', true);
    metrics.check('ok', false);
    const results = judgeThresholds(
      {
        broken_things: ['count==0'],
        checks: ['rate==1'],
        'http_req_duration{name:POST /payments}': ['p(95)<50', 'max<1000'],
        'http_req_duration{name:GET /never}': ['p(99)<1'],
      },
      metrics,
    );
    expect(results.map((r) => [r.metric, r.rule, r.ok])).toEqual([
      ['broken_things', 'count==0', false],
      ['checks', 'rate==1', false],
      ['http_req_duration{name:POST /payments}', 'p(95)<50', false],
      ['http_req_duration{name:POST /payments}', 'max<1000', true],
      ['http_req_duration{name:GET /never}', 'p(99)<1', true],
    ]);
    expect(metrics.taggedCounters.get('broken_things{status:400}')).toBe(2);
    expect(() => judgeThresholds({ broken_things: ['count=0'] }, metrics)).toThrow(/cannot read/);
    expect(() => judgeThresholds({ typo_counter: ['count==0'] }, metrics)).toThrow(
      /no such metric/,
    );
    expect(() => {
      metrics.add('undeclared');
    }).toThrow(/not declared/);
  });
});
