import { describe, expect, it } from 'vitest';
import { checkOrder, type SubjectState } from '../../src/consumer-kit/lifecycle-order.js';
import { parseCloudEvent } from '../../src/consumer-kit/parse-cloud-event.js';

const refund = (type: string, id: string) => ({ type, data: { id, object: 'refund' } });

/** Folds events through the rules; returns each verdict's problem (null = in order) and the state. */
function run(events: { type: string; data?: unknown }[], from: SubjectState = {}) {
  let state = from;
  const problems = events.map((event) => {
    const verdict = checkOrder(state, event);
    state = verdict.next;
    return verdict.inOrder ? null : verdict.problem;
  });
  return { problems, state };
}

describe('consumer kit: lifecycle order per payment', () => {
  it('when a payment settles and two refunds interleave, then every event is in order', () => {
    const { problems, state } = run([
      { type: 'payment.created' },
      { type: 'payment.settled' },
      refund('refund.created', 'r1'),
      refund('refund.created', 'r2'),
      refund('refund.succeeded', 'r2'),
      refund('refund.failed', 'r1'),
    ]);
    expect(problems).toEqual([null, null, null, null, null, null]);
    expect(state).toEqual({ payment: 'settled', refunds: { r1: 'failed', r2: 'succeeded' } });
  });

  it('when a payment fails, then it is in order and its result is final', () => {
    const { problems } = run([
      { type: 'payment.created' },
      { type: 'payment.failed' },
      { type: 'payment.settled' },
    ]);
    expect(problems).toEqual([null, null, 'payment.settled after payment.failed']);
  });

  it('when payment.settled comes before payment.created, then both are out of order', () => {
    const { problems, state } = run([{ type: 'payment.settled' }, { type: 'payment.created' }]);
    expect(problems).toEqual([
      'payment.settled before payment.created',
      'payment.created after payment.settled',
    ]);
    // Applied anyway, the stage moves forwards only.
    expect(state).toEqual({ payment: 'settled' });
  });

  it("when refund.created comes before the payment's result, then it is out of order", () => {
    expect(run([{ type: 'payment.created' }, refund('refund.created', 'r1')]).problems).toEqual([
      null,
      "refund.created before the payment's result (payment.created)",
    ]);
    expect(run([refund('refund.created', 'r1')]).problems).toEqual([
      "refund.created before the payment's result (no payment event)",
    ]);
  });

  it("when a refund's result comes before its refund.created, then only that refund is out of order", () => {
    const settled: SubjectState = { payment: 'settled', refunds: { r1: 'created' } };
    const { problems, state } = run(
      [refund('refund.succeeded', 'r2'), refund('refund.succeeded', 'r1')],
      settled,
    );
    expect(problems).toEqual(['refund.succeeded before refund.created', null]);
    expect(state.refunds).toEqual({ r1: 'succeeded', r2: 'succeeded' });
  });

  it('when a refund event repeats a stage or has no refund id, then it is out of order', () => {
    const settled: SubjectState = { payment: 'settled', refunds: { r1: 'succeeded' } };
    const { problems } = run(
      [
        refund('refund.created', 'r1'),
        refund('refund.failed', 'r1'),
        { type: 'refund.created', data: {} },
      ],
      settled,
    );
    expect(problems).toEqual([
      'refund.created after refund.succeeded',
      'refund.failed after refund.succeeded',
      'refund.created without a refund id (data.id)',
    ]);
  });

  it('when a manual payment is authorized, then settled (captured) or canceled follows it in order', () => {
    const manual = { capture_method: 'manual' };
    const captured = run([
      { type: 'payment.created', data: manual },
      { type: 'payment.authorized', data: manual },
      { type: 'payment.settled', data: { ...manual, amount_captured: 100 } },
      refund('refund.created', 'r1'),
    ]);
    expect(captured.problems).toEqual([null, null, null, null]);
    expect(captured.state).toEqual({ payment: 'settled', refunds: { r1: 'created' } });
    const canceled = run([
      { type: 'payment.created' },
      { type: 'payment.authorized' },
      { type: 'payment.canceled' },
      { type: 'payment.settled' },
      refund('refund.created', 'r1'),
    ]);
    expect(canceled.problems).toEqual([
      null,
      null,
      null,
      'payment.settled after payment.canceled',
      'refund.created after payment.canceled',
    ]);
  });

  it('when a manual step comes before its predecessor, then the missing event is named', () => {
    const verdicts = [
      checkOrder({ payment: 'created' }, { type: 'payment.canceled' }),
      checkOrder(
        { payment: 'created' },
        { type: 'payment.settled', data: { capture_method: 'manual' } },
      ),
      checkOrder({}, { type: 'payment.authorized' }),
      checkOrder({ payment: 'canceled' }, { type: 'payment.failed' }),
      checkOrder({ payment: 'settled' }, { type: 'payment.authorized' }),
    ];
    expect(verdicts.map((v) => (v.inOrder ? null : [v.problem, v.missing]))).toEqual([
      ['payment.canceled before payment.authorized', 'payment.authorized'],
      ['payment.settled before payment.authorized', 'payment.authorized'],
      ['payment.authorized before payment.created', 'payment.created'],
      ['payment.failed after payment.canceled', null],
      ['payment.authorized after payment.settled', null],
    ]);
    // Applied anyway, an early event moves the stage forwards; a late one leaves it.
    expect(verdicts.map((v) => v.next.payment)).toEqual([
      'canceled',
      'settled',
      'authorized',
      'canceled',
      'settled',
    ]);
  });

  it('when a capture is declined after the authorization, then payment.failed follows payment.authorized in order', () => {
    const verdict = checkOrder({ payment: 'authorized' }, { type: 'payment.failed' });
    expect(verdict).toMatchObject({ inOrder: true, next: { payment: 'failed' } });
  });

  it('when an automatic payment settles right after payment.created, then it is in order (no authorized)', () => {
    expect(run([{ type: 'payment.created' }, { type: 'payment.settled' }]).problems).toEqual([
      null,
      null,
    ]);
  });

  it('when an event type is outside the lifecycle, then it is in order and changes nothing', () => {
    const state: SubjectState = { payment: 'created' };
    expect(checkOrder(state, { type: 'payment.disputed' })).toEqual({ inOrder: true, next: state });
  });
});

describe('consumer kit: parsing a record value', () => {
  const envelope = {
    specversion: '1.0',
    id: 'e1',
    type: 'payment.created',
    source: '/payments-service',
    subject: 'p1',
    time: '2026-11-22T10:00:00.000Z',
    data: { id: 'p1' },
  };

  it('when the value is a CloudEvent, then it is returned as is', () => {
    expect(parseCloudEvent(Buffer.from(JSON.stringify(envelope)))).toEqual({
      ok: true,
      event: envelope,
    });
  });

  it('when the value is not a CloudEvent, then the reason is given', () => {
    expect(parseCloudEvent(null)).toEqual({ ok: false, reason: 'the record has no value' });
    expect(parseCloudEvent('{')).toEqual({ ok: false, reason: 'the value is not JSON' });
    expect(parseCloudEvent('[1]')).toEqual({ ok: false, reason: 'the value is not a JSON object' });
    expect(parseCloudEvent(JSON.stringify({ ...envelope, specversion: '0.3' }))).toEqual({
      ok: false,
      reason: 'specversion is not "1.0"',
    });
    expect(parseCloudEvent(JSON.stringify({ ...envelope, id: '' }))).toEqual({
      ok: false,
      reason: 'id is not a non-empty string of at most 200 characters',
    });
  });
});
