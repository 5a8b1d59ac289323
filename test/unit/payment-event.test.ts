import { describe, expect, it } from 'vitest';
import { DATA_VERSION, toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
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
  it('when the record is a payment.created CloudEvent, then it yields the payment id and event id', () => {
    expect(parsePaymentEvent(record('payment.created'))).toEqual({
      kind: 'payment.created',
      eventId: paymentEventId(paymentId, 'payment.created'),
      paymentId,
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
    ['bad payload', record('payment.created', { amount: 100 }), 'invalid_payload'],
  ])('when the record is %s, then it is poison (%s)', (_case, value, errorClass) => {
    expect(parsePaymentEvent(value)).toMatchObject({ kind: 'poison', errorClass });
  });

  it.each([
    ['unknown type', record('payment.refunded')],
    ['bad payload', record('payment.created', { ...payment, id: 'not-a-uuid' })],
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

/** The record with its envelope edited: `dataversion` set (or removed: undefined) and `extra`. */
function versioned(
  type: string,
  dataversion: string | undefined,
  extra: { envelope?: Record<string, unknown>; data?: Record<string, unknown> } = {},
): string {
  const envelope = JSON.parse(record(type)) as Record<string, unknown>;
  if (dataversion === undefined) delete envelope.dataversion;
  else envelope.dataversion = dataversion;
  return JSON.stringify({
    ...envelope,
    ...extra.envelope,
    data: { ...(envelope.data as object), ...extra.data },
  });
}

describe('parsePaymentEvent across versions', () => {
  const accepted = {
    kind: 'payment.created',
    eventId: paymentEventId(paymentId, 'payment.created'),
    paymentId,
  };

  it('when this release writes an event, then it carries dataversion 1.0 in the value and the headers', () => {
    const written = toKafkaRecord({
      eventId: accepted.eventId,
      eventType: 'payment.created',
      aggregateId: paymentId,
      data: payment,
      createdAt: new Date(),
    });
    expect(JSON.parse(written.value)).toMatchObject({ dataversion: DATA_VERSION });
    expect(written.headers.ce_dataversion).toBe('1.0');
  });

  it.each([
    ['the previous release (no dataversion)', versioned('payment.created', undefined)],
    [
      'a newer minor with fields and values it does not know',
      versioned('payment.created', '1.7', {
        envelope: { partition_hint: 3 },
        data: { currency: 'XTS', source: 'pm_next', risk: { score: 12 } },
      }),
    ],
  ])('when the event is from %s, then it is read', (_case, value) => {
    expect(parsePaymentEvent(value)).toEqual(accepted);
  });

  it('when a payment.created is of a newer major, then it is poison with its event id (replayable), and an upgraded reader reads it', () => {
    const value = versioned('payment.created', '2.0', { data: { amount: { minor: 100 } } });
    expect(parsePaymentEvent(value)).toMatchObject({
      kind: 'poison',
      errorClass: 'unsupported_data_version',
      eventId: accepted.eventId,
    });
    expect(parsePaymentEvent(value, 2)).toEqual(accepted);
  });

  it('when a type settlement skips is of a newer major, then it is still skipped', () => {
    expect(parsePaymentEvent(versioned('payment.settled', '2.0')).kind).toBe('ignored');
  });

  it('when dataversion is not a version, then the envelope is invalid', () => {
    expect(parsePaymentEvent(versioned('payment.created', 'next'))).toMatchObject({
      kind: 'poison',
      errorClass: 'invalid_envelope',
    });
  });
});
