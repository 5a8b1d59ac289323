import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENT_SOURCE, toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { EVENT_ID_NAMESPACE, EVENT_TYPES } from '../../src/events/event-types.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { configSchema } from '../../src/platform/config/config.js';

/**
 * The AsyncAPI document is written by hand; these checks keep it from drifting away from the
 * code that mints ids and builds records (no YAML parser: the lines are read as text).
 */
const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/asyncapi.yaml'), 'utf8');

/** The value after `key:` on the first line (after `from`) that has it. */
function valueOf(key: string, from = 0): string {
  const match = new RegExp(`^\\s*${key}: '?([^'\\n]+)'?$`, 'm').exec(doc.slice(from));
  if (!match?.[1]) throw new Error(`no ${key} in docs/asyncapi.yaml`);
  return match[1];
}

describe('docs/asyncapi.yaml', () => {
  it('when the document names the event id namespace, then it is the one the code uses', () => {
    expect(valueOf('namespace')).toBe(EVENT_ID_NAMESPACE);
    expect(doc).toContain('payment:{payment_id}:{event_type}');
  });

  it('when the example event is rebuilt with the code, then its id, headers and source match', () => {
    const example = doc.indexOf('- name: created');
    const subject = valueOf('ce_subject', example);
    const eventId = valueOf('ce_id', example);
    expect(eventId).toBe(paymentEventId(subject, 'payment.created'));
    const record = toKafkaRecord({
      eventId,
      eventType: 'payment.created',
      aggregateId: subject,
      data: {},
      createdAt: new Date(valueOf('ce_time', example)),
      traceparent: valueOf('ce_traceparent', example),
    });
    for (const [name, value] of Object.entries(record.headers)) {
      expect(valueOf(name, example), name).toBe(value);
    }
    expect(valueOf('ce_source', example)).toBe(EVENT_SOURCE);
  });

  it('when the document lists topics, then they are the configured defaults', () => {
    const defaults = configSchema.parse({});
    expect(doc).toContain(`address: ${defaults.KAFKA_TOPIC_PAYMENTS}\n`);
    expect(doc).toContain(`address: ${defaults.KAFKA_TOPIC_DLQ}\n`);
  });

  it('when the document lists event types, then they are the events contract of src/events/, each with its message', () => {
    const enumStart = doc.indexOf('    EventType:');
    const listed = /\[([^\]]+)\]/.exec(doc.slice(enumStart))?.[1] ?? '';
    const types = listed.split(',').map((type) => type.trim());
    expect(types.filter((type) => type !== '')).toEqual([...EVENT_TYPES]);
    const published = doc.slice(
      doc.indexOf('  publishPaymentEvents:'),
      doc.indexOf('  settlePayments:'),
    );
    for (const type of EVENT_TYPES) {
      const message = type.replace(/\.(\w)/, (_, letter: string) => letter.toUpperCase());
      expect(doc, type).toContain(`      name: ${type}\n`);
      expect(doc, type).toContain(`                const: ${type}\n`);
      expect(published, type).toContain(`/messages/${message}'`);
    }
  });
});
