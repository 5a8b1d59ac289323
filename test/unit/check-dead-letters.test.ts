import { describe, expect, it } from 'vitest';
import { DLQ_HEADERS, REPLAY_TOKEN_HEADER } from '../../src/jobs/dead-letters/dead-letter.js';
import type { ConsumedRecord } from '../../src/platform/kafka/kafka.js';
import { checkDeadLetterReasons, checkDeadLetters } from '../../tools/verify/check-dead-letters.js';
import { createDeadLetterLog, createEventLog } from '../../tools/verify/event-log.js';

const PAYMENT = '0193a000-0000-7000-8000-000000000001';
const CREATED = '5b3e0000-0000-5000-8000-000000000001';

/** A dead letter as settlement (offset >= 0) or refunds (offset -1) write it. */
function letter(offset: string, eventId = CREATED): ConsumedRecord {
  return {
    topic: 'dlq',
    partition: 0,
    offset: '0',
    key: PAYMENT,
    value: Buffer.from('{}'),
    headers: {
      [DLQ_HEADERS.eventId]: eventId,
      [DLQ_HEADERS.originalTopic]: 'payments',
      [DLQ_HEADERS.originalPartition]: offset === '-1' ? '-1' : '3',
      [DLQ_HEADERS.originalOffset]: offset,
    },
  };
}

/** A copy of payment.created that dlq:replay put back with `token`. */
function replayed(token: string, offset: string): ConsumedRecord {
  return {
    topic: 'payments',
    partition: 3,
    offset,
    key: PAYMENT,
    value: Buffer.from('{}'),
    headers: {
      ce_id: CREATED,
      ce_type: 'payment.created',
      ce_subject: PAYMENT,
      [REPLAY_TOKEN_HEADER]: token,
    },
  };
}

function judge(letters: ConsumedRecord[], copies: ConsumedRecord[] = [], scope = [PAYMENT]) {
  const deadLetters = createDeadLetterLog();
  for (const record of letters) deadLetters.add(record);
  const events = createEventLog();
  for (const record of copies) events.add(record);
  return checkDeadLetters(deadLetters.copies, events.replayTokens, new Set(scope));
}

describe('checkDeadLetters (verify: every exhausted charge and refund dead-lettered once)', () => {
  it('when each event id has one letter, then nothing is flagged', () => {
    expect(judge([letter('10'), letter('-1', 'another-event')])).toEqual([]);
  });

  it('when one charge letter was sent twice, then duplicate_dead_letter names the payment and the source record', () => {
    const violations = judge([letter('10'), letter('10')]);
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatchObject({ code: 'duplicate_dead_letter', paymentId: PAYMENT });
    expect(violations[0]?.detail).toContain('2 dead letters with event id');
    expect(violations[0]?.detail).toContain('from one record (payments:3:10)');
  });

  it('when a refund letter (no source record) was sent twice, then it is flagged by the count', () => {
    const violations = judge([letter('-1'), letter('-1')]);
    expect(violations.map((v) => v.code)).toEqual(['duplicate_dead_letter']);
    expect(violations[0]?.detail).toBe(`2 dead letters with event id ${CREATED}, 0 replays`);
  });

  it('when a replayed job died again from the replayed copy, then its second letter is allowed, a third is not', () => {
    const copies = [replayed('token-1', '40')];
    expect(judge([letter('10'), letter('40')], copies)).toEqual([]);
    // The same replay token seen twice is still one replay.
    expect(judge([letter('10'), letter('40')], [...copies, replayed('token-1', '41')])).toEqual([]);
    expect(judge([letter('10'), letter('40'), letter('41')], copies)).toHaveLength(1);
    // One replay, but the letter of the first life was sent twice.
    expect(judge([letter('10'), letter('10')], copies)[0]?.detail).toContain(
      'from one record (payments:3:10)',
    );
  });

  it('when the letters belong to a payment outside the scope, then they are not judged', () => {
    expect(judge([letter('10'), letter('10')], [], ['some-other-payment'])).toEqual([]);
  });
});

describe('checkDeadLetterReasons (verify: dead letters by reason; none for an outage)', () => {
  function reasons(classes: (string | undefined)[], scope: string[] | null = null) {
    const log = createDeadLetterLog();
    for (const errorClass of classes) {
      const record = letter('10');
      if (errorClass !== undefined) record.headers[DLQ_HEADERS.errorClass] = errorClass;
      log.add(record);
    }
    return checkDeadLetterReasons(log.reasons, scope ? new Set(scope) : null);
  }

  it('when letters were answered (tok_unavailable, a timeout past the window, poison), then they are counted by reason and none is a violation', () => {
    const result = reasons([
      'acquirer_transient',
      'acquirer_transient',
      'acquirer_timeout',
      'malformed_json',
      undefined,
    ]);
    expect(result.violations).toEqual([]);
    expect(result.byReason).toEqual({
      acquirer_transient: 2,
      acquirer_timeout: 1,
      malformed_json: 1,
      unknown: 1,
    });
  });

  it('when a letter says the acquirer was never reached, then each is a violation naming the payment', () => {
    const result = reasons(['acquirer_unavailable', 'acquirer_breaker_open', 'acquirer_transient']);
    expect(result.violations).toEqual([
      {
        code: 'acquirer_unavailable_dead_letter',
        paymentId: PAYMENT,
        detail: `dead letter ${CREATED}: acquirer_unavailable`,
      },
      {
        code: 'acquirer_unavailable_dead_letter',
        paymentId: PAYMENT,
        detail: `dead letter ${CREATED}: acquirer_breaker_open`,
      },
    ]);
    expect(result.byReason).toMatchObject({ acquirer_unavailable: 1, acquirer_transient: 1 });
  });

  it('when a scope leaves the payment out, then its letters are neither counted nor judged', () => {
    expect(reasons(['acquirer_unavailable'], ['some-other-payment'])).toEqual({
      byReason: {},
      violations: [],
    });
  });
});
