import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/events/event-types.js';
import { paymentEventId, type PaymentEventType } from '../../src/payments/payment-event-id.js';
import type { ConsumedRecord } from '../../src/platform/kafka/kafka.js';
import { createEventLog } from '../../tools/verify/event-log.js';

// verify reads every payment event type of the contract (src/events/), the manual-capture ones
// of issue 40 included: none is taken for a malformed record.

function record(paymentId: string, type: string, offset: number, eventId?: string): ConsumedRecord {
  return {
    topic: 'payments.events',
    partition: 0,
    offset: String(offset),
    key: paymentId,
    value: null,
    headers: {
      ce_id: eventId ?? paymentEventId(paymentId, type as PaymentEventType),
      ce_type: type,
      ce_subject: paymentId,
    },
  };
}

describe('verify: the event log of the payments topic', () => {
  it('when a manual payment is authorized and canceled, then each event is indexed, none malformed', () => {
    const paymentId = randomUUID();
    const log = createEventLog();
    const types = ['payment.created', 'payment.authorized', 'payment.canceled'];
    types.forEach((type, offset) => {
      log.add(record(paymentId, type, offset));
    });
    expect(log.malformed).toEqual([]);
    const events = log.payments.get(paymentId);
    expect(events?.authorized.map((copy) => copy.eventId)).toEqual([
      paymentEventId(paymentId, 'payment.authorized'),
    ]);
    expect(events?.canceled.map((copy) => copy.offset)).toEqual([2n]);
    expect(log.counts()).toEqual({ read: 3, distinct: 3, copies: 0 });
  });

  it('when every payment type of the contract is read, then every one is indexed', () => {
    const paymentId = randomUUID();
    const log = createEventLog();
    const paymentTypes = EVENT_TYPES.filter((type) => type.startsWith('payment.'));
    paymentTypes.forEach((type, offset) => {
      log.add(record(paymentId, type, offset));
    });
    expect(log.malformed).toEqual([]);
    expect(log.counts().distinct).toBe(paymentTypes.length);
  });

  it('when a record has a type outside the contract, then it is malformed', () => {
    const log = createEventLog();
    log.add(record(randomUUID(), 'payment.captured', 0, randomUUID()));
    expect(log.malformed).toHaveLength(1);
  });
});
