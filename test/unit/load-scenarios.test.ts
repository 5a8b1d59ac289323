import { describe, expect, it } from 'vitest';
import {
  isRetryable,
  retryPause,
  send,
  type Answer,
  type Request,
  type Step,
  type Tally,
} from '../../k6/scenarios/careful-client.js';
import {
  endedAsDecided,
  raceBroken,
  expiredFirst,
  raceKeys,
  type RaceKey,
} from '../../k6/scenarios/capture-race.js';
import { crossRaceBroken } from '../../k6/scenarios/cross-merchant.js';
import { SCENARIOS } from '../../k6/scenarios/index.js';
import { mismatchRaceBroken, reorderedBody } from '../../k6/scenarios/mismatch.js';
import { followUpOf, mixBody, pick } from '../../k6/scenarios/mix.js';
import { refundsBroken } from '../../k6/scenarios/refund-storm.js';
import {
  apiKeys,
  baseUrls,
  durationSeconds,
  durationSetting,
  intSetting,
  runId,
} from '../../k6/scenarios/settings.js';
import { stormBody, stormBroken } from '../../k6/scenarios/storm.js';

/** An answer as a scenario reads it. */
function answer(status: number, body: unknown = {}, replayed = false): Answer {
  return {
    status,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    retryAfter: null,
    replayed,
    error: status === 0 ? 'ECONNRESET' : '',
  };
}

const names = (broken: readonly { name: string }[]) => broken.map((b) => b.name).sort();

describe('the settings both engines read', () => {
  it('when a setting is unset or empty, then its default; when it is not an integer >= 0, then an error naming it', () => {
    expect(intSetting({}, 'KEYS', 200)).toBe(200);
    expect(intSetting({ KEYS: '' }, 'KEYS', 200)).toBe(200);
    expect(intSetting({ KEYS: '7' }, 'KEYS', 200)).toBe(7);
    expect(() => intSetting({ KEYS: '-1' }, 'KEYS', 200)).toThrow(/KEYS must be an integer/);
    expect(() => intSetting({ KEYS: '1.5' }, 'KEYS', 200)).toThrow(/KEYS/);
  });

  it("when a duration is written as k6 writes them, then its seconds; anything else is refused with the setting's name", () => {
    expect(durationSeconds('90s')).toBe(90);
    expect(durationSeconds('10m')).toBe(600);
    expect(durationSeconds('1h30m')).toBe(5400);
    expect(durationSeconds('500ms')).toBe(0.5);
    expect(() => durationSeconds('ten minutes')).toThrow(/not a duration/);
    expect(() => durationSeconds('')).toThrow(/not a duration/);
    expect(() => durationSetting({ DURATION: '5x' }, 'DURATION', '60s')).toThrow(/^DURATION/);
  });

  it('when BASE_URLS lists several instances it wins over BASE_URL; a trailing slash is dropped; a non-origin is refused', () => {
    expect(baseUrls({})).toEqual(['http://127.0.0.1:3000']);
    expect(baseUrls({ BASE_URL: 'http://a:1/' })).toEqual(['http://a:1']);
    expect(baseUrls({ BASE_URL: 'http://a:1', BASE_URLS: 'http://b:2, http://c:3' })).toEqual([
      'http://b:2',
      'http://c:3',
    ]);
    expect(() => baseUrls({ BASE_URL: 'http://a:1/payments' })).toThrow(/not an http\(s\) origin/);
  });

  it('when API_KEYS has fewer keys than a scenario needs, then an error saying how to make one', () => {
    expect(apiKeys({ API_KEYS: 'sk_a, sk_b' }, 2)).toEqual(['sk_a', 'sk_b']);
    expect(() => apiKeys({ API_KEYS: 'sk_a' }, 2)).toThrow(/at least 2 API key.*merchant:create/);
  });

  it('when RUN_ID is given it is the key prefix; when it is not visible ASCII, then an error', () => {
    expect(runId({ RUN_ID: 'r1' }, 'storm', 'load')).toBe('r1');
    expect(runId({}, 'storm', 'load', 35)).toBe('load-storm-z');
    expect(() => runId({ RUN_ID: 'has space' }, 'storm', 'load')).toThrow(/RUN_ID/);
  });
});

describe('the careful client', () => {
  /** Runs `send` on scripted answers; returns what it sent round by round and its counts. */
  function runSend(rounds: Answer[][], requests: Request[], maxAttempts: number) {
    const counts: Record<string, number> = {};
    const tally: Tally = {
      add: (name, value = 1) => {
        counts[name] = (counts[name] ?? 0) + value;
      },
      check: () => undefined,
    };
    const sent: Request[][] = [];
    const sleeps: number[] = [];
    const steps = send(requests, tally, maxAttempts);
    let next = steps.next([]);
    while (!next.done) {
      const step: Step = next.value;
      if (step.kind === 'sleep') {
        sleeps.push(step.seconds);
        next = steps.next([]);
      } else {
        sent.push(step.requests);
        next = steps.next(rounds[sent.length - 1] ?? []);
      }
    }
    return { finals: next.value, sent, sleeps, counts };
  }
  const request = (target: number): Request => ({
    method: 'POST',
    target,
    path: '/payments',
    headers: { 'Idempotency-Key': 'k' },
    body: '{}',
    name: 'POST /payments',
  });

  it('when answers are 409, 429, 5xx or none they are sent again (to the next instance), and 4xx others are final', () => {
    expect([0, 409, 429, 500, 503].every(isRetryable)).toBe(true);
    expect([200, 202, 400, 401, 404, 422].some(isRetryable)).toBe(false);
    const { finals, sent, counts } = runSend(
      [
        [answer(202), answer(409), answer(503)],
        [answer(202, {}, true), answer(202, {}, true)],
      ],
      [request(0), request(1), request(2)],
      10,
    );
    expect(sent.map((round) => round.map((r) => r.target))).toEqual([
      [0, 1, 2],
      [2, 3],
    ]);
    expect(finals.map((a) => a.status)).toEqual([202, 202, 202]);
    expect(counts).toEqual({ server_errors: 1, retries: 2 });
  });

  it('when a request is still unanswered after MAX_ATTEMPTS rounds, then it counts as unresolved and its last answer is final', () => {
    const { finals, sent, counts } = runSend([[answer(0)], [answer(503)]], [request(0)], 2);
    expect(sent).toHaveLength(2);
    expect(finals[0]?.status).toBe(503);
    expect(counts).toEqual({ server_errors: 2, retries: 1, unresolved_requests: 1 });
  });

  it('when the server says Retry-After, then the pause is that long (plus at most 10%), else 50 ms doubling up to 2 s', () => {
    expect(retryPause(1, 3, 0)).toBe(3);
    expect(retryPause(1, 3, 0.999)).toBeLessThan(3.3);
    expect(retryPause(1, 0, 0)).toBeCloseTo(0.05);
    expect(retryPause(4, 0, 0)).toBeCloseTo(0.4);
    expect(retryPause(20, 0, 0)).toBe(2);
    const slow = { ...answer(429), retryAfter: '2' };
    const { sleeps } = runSend([[slow], [answer(202)]], [request(0)], 5);
    expect(sleeps[0]).toBeGreaterThanOrEqual(2);
  });
});

describe('the invariants each scenario judges', () => {
  const paid = (id: string, replayed: boolean) => answer(202, { id, amount: 100 }, replayed);

  it('storm: one id, one body, one creation is clean; a second creation, another id, another body or a 4xx each break their invariant', () => {
    expect(stormBroken([paid('a', false), paid('a', true), answer(0)])).toEqual([]);
    expect(names(stormBroken([paid('a', false), paid('a', false)]))).toEqual([
      'storm_created_twice',
    ]);
    expect(names(stormBroken([paid('a', false), paid('b', true)]))).toEqual([
      'storm_body_mismatch',
      'storm_id_mismatch',
    ]);
    expect(stormBroken([paid('a', false), answer(400)])).toEqual([
      { name: 'storm_unexpected_status', tags: { status: '400' } },
    ]);
    expect(names(stormBroken([answer(503), answer(0)]))).toEqual(['storm_keys_without_payment']);
  });

  it('storm: every copy of a key sends the same bytes, and keys of one run differ', () => {
    expect(stormBody('r', 3, 10)).toBe(stormBody('r', 3, 10));
    expect(stormBody('r', 3, 10)).not.toBe(stormBody('r', 4, 10));
  });

  it('mismatch: the losing body must end in 422 idempotency_key_reused; a 202 for it or another status breaks the run', () => {
    const reused = answer(422, { code: 'idempotency_key_reused' });
    const won = answer(202, { id: 'p', amount: 1001 });
    expect(mismatchRaceBroken([won, reused], [1001, 1002])).toEqual({
      broken: [],
      winner: { id: 'p', amount: 1001 },
    });
    expect(
      names(mismatchRaceBroken([won, answer(202, { id: 'q', amount: 1002 })], [1001, 1002]).broken),
    ).toEqual(['mismatch_id_mismatch', 'mismatch_wrongly_accepted']);
    expect(mismatchRaceBroken([won, answer(409)], [1001, 1002]).broken).toEqual([
      { name: 'mismatch_not_rejected', tags: { status: '409' } },
    ]);
    expect(JSON.parse(reorderedBody(4, 2))).toEqual({
      amount: 1002,
      currency: 'EUR',
      description: 'mismatch #4',
    });
  });

  it('cross-merchant: one payment per merchant, all distinct; a 422 is a collision across merchants', () => {
    const a = answer(202, { id: 'a' });
    const b = answer(202, { id: 'b' });
    expect(crossRaceBroken([a, a, b, b], 2, 2)).toEqual({
      broken: [],
      idsByMerchant: [['a'], ['b']],
    });
    expect(names(crossRaceBroken([a, a, a, a], 2, 2).broken)).toEqual(['cross_merchant_collision']);
    expect(names(crossRaceBroken([a, a, b, answer(422)], 2, 2).broken)).toEqual([
      'cross_merchant_collision',
    ]);
  });

  it('refund storm: at most PARTS refunds and never more than the amount; refusals only refund_exceeds_payment', () => {
    const refund = (id: string, replayed: boolean) => answer(202, { id, amount: 25 }, replayed);
    const exceeds = answer(422, { code: 'refund_exceeds_payment' });
    const plan = { copies: 2, parts: 2, amount: 50 };
    expect(
      refundsBroken(
        [refund('r1', false), refund('r1', true), refund('r2', false), exceeds, exceeds, exceeds],
        plan,
      ),
    ).toEqual({ broken: [], accepted: 2, sum: 50 });
    const over = refundsBroken(
      [
        refund('r1', false),
        refund('r1', true),
        refund('r2', false),
        refund('r2', true),
        refund('r3', false),
        exceeds,
      ],
      plan,
    );
    expect(names(over.broken)).toEqual(['refund_accepted_too_many', 'refund_sum_exceeded']);
    expect(names(refundsBroken([refund('r1', false), refund('r1', false)], plan).broken)).toEqual([
      'refund_created_twice',
    ]);
    expect(refundsBroken([answer(404), answer(404)], plan).broken).toContainEqual({
      name: 'refund_unexpected_status',
      tags: { status: '404' },
    });
  });

  it('capture race: one winner, the others refused with its code, copies identical; anything else breaks its invariant', () => {
    const keys: RaceKey[] = raceKeys('k', 1000, { captures: 2, cancels: 1 });
    expect(keys.map((key) => key.key)).toEqual(['k-capture-0', 'k-cancel-0', 'k-capture-1']);
    const won = (replayed: boolean) =>
      answer(202, { id: 'p', status: 'requires_capture' }, replayed);
    const captured = answer(422, { code: 'payment_already_captured' });
    const canceled = answer(422, { code: 'payment_already_canceled' });
    const clean = raceBroken(
      [won(false), won(true), captured, captured, captured, captured],
      keys,
      2,
    );
    expect(clean).toEqual({ broken: [], winner: keys[0], refusals: 4 });
    expect(
      names(
        raceBroken([won(false), won(true), won(false), won(true), captured, captured], keys, 2)
          .broken,
      ),
    ).toEqual(['capture_race_two_winners']);
    expect(
      names(
        raceBroken([won(false), won(false), canceled, canceled, captured, answer(404)], keys, 2)
          .broken,
      ),
    ).toEqual([
      'capture_race_decided_twice',
      'capture_race_replay_mismatch',
      'capture_race_unexpected_status',
      'capture_race_wrong_refusal',
      'capture_race_wrong_refusal',
    ]);
    expect(
      names(
        raceBroken([captured, captured, canceled, canceled, captured, captured], keys, 2).broken,
      ),
    ).toEqual(['capture_race_no_winner']);
    const capture = keys[0] as RaceKey;
    const cancel = keys[1] as RaceKey;
    expect(endedAsDecided({ status: 'settled', amount_captured: 1000 }, capture)).toBe(true);
    expect(endedAsDecided({ status: 'settled', amount_captured: 999 }, capture)).toBe(false);
    expect(
      endedAsDecided({ status: 'canceled', cancellation_reason: 'requested_by_customer' }, cancel),
    ).toBe(true);
    expect(endedAsDecided({ status: 'settled', amount_captured: 1000 }, cancel)).toBe(false);
    expect(endedAsDecided(null, capture)).toBe(false);
    // An answer no retry resolved is the client's count, not a replay that differs.
    expect(
      names(
        raceBroken([won(false), answer(503), captured, captured, captured, captured], keys, 2)
          .broken,
      ),
    ).toEqual([]);
    // A race its payment's window beat: every key refused payment_already_canceled.
    const expired = { status: 'canceled', cancellation_reason: 'expired' };
    expect(expiredFirst([canceled, canceled, answer(0)], expired)).toBe(true);
    expect(expiredFirst([canceled, captured], expired)).toBe(false);
    expect(expiredFirst([canceled], { status: 'canceled', cancellation_reason: 'duplicate' })).toBe(
      false,
    );
    expect(expiredFirst([canceled], { status: 'requires_capture' })).toBe(false);
  });

  it("mix: the sources' weights and the follow-ups' shares are the ones the header states", () => {
    expect(
      pick(
        [
          ['a', 1],
          ['b', 3],
        ],
        0,
      ),
    ).toBe('a');
    expect(
      pick(
        [
          ['a', 1],
          ['b', 3],
        ],
        0.3,
      ),
    ).toBe('b');
    expect(mixBody(0, 0, 0.999).source).toBe('tok_timeout');
    expect(mixBody(0, 0, 0).source).toBe('tok_visa');
    expect([0, 0.11, 0.2, 0.5].map(followUpOf)).toEqual(['retry', 'reuse', 'read', 'none']);
  });

  it('every scenario declares each counter its thresholds name, so a threshold can never judge a counter nobody adds to', () => {
    const env = { API_KEYS: 'sk_a,sk_b' };
    for (const [name, scenario] of Object.entries(SCENARIOS)) {
      const builtIn = ['checks', 'dropped_iterations'];
      for (const metric of Object.keys(scenario.thresholds(scenario.settings(env)))) {
        if (metric.startsWith('http_req_duration{') || builtIn.includes(metric)) continue;
        expect(scenario.counters, `${name}: ${metric}`).toContain(metric);
      }
    }
  });
});
