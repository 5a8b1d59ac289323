import { describe, expect, it } from 'vitest';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/outbox/event-id.js';
import { parsePaymentEvent } from '../../src/settlement/payment-event.js';

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
const record = (type: string, data: unknown = payment) =>
  toKafkaRecord({
    eventId: paymentEventId(paymentId, 'payment.created'),
    eventType: type,
    aggregateId: paymentId,
    data,
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
  }).value;

describe('parsePaymentEvent', () => {
  it('when the record is a payment.created CloudEvent, then it yields the payment and event id', () => {
    expect(parsePaymentEvent(record('payment.created'))).toEqual({
      kind: 'payment.created',
      eventId: paymentEventId(paymentId, 'payment.created'),
      payment,
    });
  });

  it('when the type is one of our result events, then it is ignored, not poison', () => {
    expect(parsePaymentEvent(record('payment.settled')).kind).toBe('ignored');
  });

  it.each([
    ['not json', '{oops', 'malformed_json'],
    ['null value', null, 'empty_message'],
    ['no envelope', '{"hello":"world"}', 'invalid_envelope'],
    ['unknown type', record('payment.refunded'), 'unknown_event_type'],
    ['bad payload', record('payment.created', { id: paymentId }), 'invalid_payload'],
  ])('when the record is %s, then it is poison (%s)', (_case, value, errorClass) => {
    expect(parsePaymentEvent(value)).toMatchObject({ kind: 'poison', errorClass });
  });

  it.each([
    ['unknown type', record('payment.refunded')],
    ['bad payload', record('payment.created', { ...payment, currency: 'XTS' })],
  ])(
    'when the record is poison with a readable envelope (%s), then it keeps the envelope id for dlq:replay',
    (_case, value) => {
      expect(parsePaymentEvent(value)).toMatchObject({
        kind: 'poison',
        eventId: paymentEventId(paymentId, 'payment.created'),
      });
    },
  );

  it('when the envelope cannot be read, then the poison has no event id', () => {
    expect(parsePaymentEvent('{oops')).not.toHaveProperty('eventId');
  });
});
