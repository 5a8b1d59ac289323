import { describe, expect, it } from 'vitest';
import { createAcquirerBreaker } from '../../src/acquirer/acquirer-breaker.js';
import { failureOf, retryAfterMs } from '../../src/acquirer/http-acquirer.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';
import { capturedLogger } from '../support/captured-logger.js';

/** The breaker's logic on a fake clock (DESIGN 107); the real acquirer is in the integration tests. */
function breaker(failureThreshold = 3, openMs = 1_000) {
  const clock = { now: 0 };
  const { lines, logger } = capturedLogger();
  const gate = createAcquirerBreaker({
    failureThreshold,
    openMs,
    logger,
    outageLogIntervalMs: 10_000,
    now: () => clock.now,
  });
  return { gate, clock, lines };
}

const stateMetric = async () =>
  (await metricsRegistry.getSingleMetric('acquirer_breaker_state')?.get())?.values[0]?.value;

describe('acquirer circuit breaker', () => {
  it('when calls keep failing unsent, then it opens at the threshold, claims nothing, and admits one probe after the open time', async () => {
    const { gate, clock } = breaker();
    expect(gate.admit(64)).toBe(64);
    gate.record('not_sent');
    gate.record('unknown');
    expect(gate.closed).toBe(true);
    gate.record('not_sent');
    expect(gate.state).toBe('open');
    expect(await stateMetric()).toBe(2);
    expect(gate.admit(64)).toBe(0);
    expect(gate.tryCall()).toBe(false);
    expect(gate.blockedForMs()).toBe(1_000);

    clock.now = 1_000;
    expect(gate.state).toBe('half_open');
    expect(await stateMetric()).toBe(1);
    expect(gate.admit(64)).toBe(1);
    expect(gate.admit(64)).toBe(0);
    expect(gate.blockedForMs()).toBeGreaterThan(0);
    expect(gate.tryCall()).toBe(true);
    expect(gate.tryCall()).toBe(false);
  });

  it('when the half-open probe place goes to a kind with nothing due (refunds), then it comes back at once for the other kind (charges), not after the open time', () => {
    const { gate, clock } = breaker(1, 5_000);
    gate.record('not_sent');
    clock.now = 5_000;
    // The refund loop is admitted the probe, claims nothing, gives the place back.
    expect(gate.admit(8)).toBe(1);
    gate.unused();
    // The charge loop gets it at once and its probe is called.
    expect(gate.blockedForMs()).toBe(0);
    expect(gate.admit(64)).toBe(1);
    expect(gate.tryCall()).toBe(true);
    // A place whose job is calling is not given back by a later empty claim.
    gate.unused();
    expect(gate.admit(8)).toBe(0);
    gate.record('answered');
    expect(gate.state).toBe('closed');
  });

  it('when the probe fails, then it opens again; when the next probe is answered, then it closes and wakes the workers', async () => {
    const { gate, clock, lines } = breaker(1, 500);
    let woken = 0;
    gate.onClose(() => woken++);
    gate.record('not_sent');
    clock.now = 500;
    expect(gate.admit(10)).toBe(1);
    expect(gate.tryCall()).toBe(true);
    gate.record('unknown');
    expect(gate.state).toBe('open');
    clock.now = 1_000;
    expect(gate.admit(10)).toBe(1);
    expect(gate.tryCall()).toBe(true);
    gate.record('answered');
    expect(gate.state).toBe('closed');
    expect(woken).toBe(1);
    expect(gate.admit(10)).toBe(10);
    expect(await stateMetric()).toBe(0);
    // A few lines for the whole outage: opened, the acquirer's outage log, closed.
    expect(lines.map((l) => l.msg)).toEqual([
      'acquirer unavailable',
      'acquirer breaker opened: no charge or refund is claimed until a probe succeeds',
      'acquirer available again',
      'acquirer breaker closed',
    ]);
    expect(lines[3]).toMatchObject({ open_for_ms: 1_000, probes: 2 });
  });

  it('when an answer comes between failures, then the count starts again', () => {
    const { gate } = breaker(3);
    gate.record('not_sent');
    gate.record('not_sent');
    gate.record('answered');
    gate.record('not_sent');
    gate.record('not_sent');
    expect(gate.closed).toBe(true);
  });

  it('when the acquirer says Retry-After longer than the open time, then it stays open that long', () => {
    const { gate, clock } = breaker(1, 1_000);
    gate.record('not_sent', { errorClass: 'acquirer_unavailable', notBeforeMs: 7_000 });
    clock.now = 6_999;
    expect(gate.admit(5)).toBe(0);
    clock.now = 7_000;
    expect(gate.admit(5)).toBe(1);
  });

  it('when a probe was admitted but never called, then another is admitted after the open time', () => {
    const { gate, clock } = breaker(1, 100);
    gate.record('not_sent');
    clock.now = 100;
    expect(gate.admit(3)).toBe(1);
    clock.now = 150;
    expect(gate.admit(3)).toBe(0);
    clock.now = 200;
    expect(gate.admit(3)).toBe(1);
    expect(gate.tryCall()).toBe(true);
  });
});

describe('acquirer answers over HTTP, classified', () => {
  const answer = (status: number, json: unknown, headers: Record<string, string> = {}) =>
    failureOf({ status, headers, json });

  it('when refused before processing (429, 503 with Retry-After or processed: false), then nothing was sent and the wait is kept', () => {
    expect(answer(429, null, { 'retry-after': '3' })).toMatchObject({
      delivery: 'not_sent',
      retryAfterMs: 3_000,
    });
    expect(answer(503, null, { 'retry-after': '2' })).toMatchObject({ delivery: 'not_sent' });
    expect(answer(503, { processed: false })).toMatchObject({ delivery: 'not_sent' });
  });

  it('when the acquirer answered a retryable error or a 4xx, then it is an answer; any other 5xx is unknown', () => {
    expect(answer(503, { processed: true, error_class: 'acquirer_unavailable' })).toMatchObject({
      delivery: 'answered',
      errorClass: 'acquirer_unavailable',
    });
    expect(answer(400, { error: 'invalid_request' })).toMatchObject({ delivery: 'answered' });
    expect(answer(503, null)).toMatchObject({ delivery: 'unknown' });
    expect(answer(500, null)).toMatchObject({ delivery: 'unknown' });
    expect(answer(502, null)).toMatchObject({ delivery: 'unknown' });
  });

  it('when Retry-After is a date, then it is the time until then', () => {
    expect(retryAfterMs('Thu, 01 Jan 1970 00:00:05 GMT', 1_000)).toBe(4_000);
    expect(retryAfterMs('soon')).toBeUndefined();
  });
});
