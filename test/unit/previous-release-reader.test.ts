import { describe, expect, it } from 'vitest';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { parsePaymentEvent as previousRelease } from '../fixtures/previous-release/payment-event.js';

/**
 * Mixed versions, the other way round from settlement-mixed-versions.test.ts: the previous
 * release's settlement reader (a fixture of its code) fed this release's events, as when the API
 * and relay are rolled before settlement.
 */
const paymentId = '0190a6e2-7f6a-7d3c-8a4b-123456789abc';
const payment = {
  id: paymentId,
  object: 'payment',
  amount: 100,
  currency: 'EUR',
  status: 'pending',
  source: 'tok_visa',
  description: null,
  metadata: {},
  created_at: '2026-01-01T00:00:00.000Z',
};
const eventId = paymentEventId(paymentId, 'payment.created');
const written = (data: unknown) =>
  toKafkaRecord({
    eventId,
    eventType: 'payment.created',
    aggregateId: paymentId,
    data,
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
  });

describe('the previous release settlement reader against this release', () => {
  it('when this release writes a payment.created (with dataversion 1.0), then the previous reader reads it', () => {
    const record = written(payment);
    expect(record.headers.ce_dataversion).toBe('1.0');
    expect(previousRelease(record.value)).toEqual({ kind: 'payment.created', eventId, payment });
  });

  it('when a newer API adds a field, then the previous reader ignores it', () => {
    // A field this release does not have either (the fixture reads with this release's schema).
    expect(previousRelease(written({ ...payment, statement_descriptor: 'ACME' }).value)).toEqual({
      kind: 'payment.created',
      eventId,
      payment,
    });
  });

  it('when a newer API sends a value the previous reader does not know, then it dead-letters the event with its id (replayable after the upgrade), never drops it', () => {
    expect(previousRelease(written({ ...payment, currency: 'XTS' }).value)).toMatchObject({
      kind: 'poison',
      errorClass: 'invalid_payload',
      eventId,
    });
  });
});
