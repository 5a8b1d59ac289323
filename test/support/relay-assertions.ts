import { expect } from 'vitest';
import type { KafkaRecord } from '../../src/outbox/cloud-event.js';
import type { BuiltEvent } from './outbox-builder.js';
import type { TopicMessage } from './topic-reader.js';

/**
 * The relay's delivery contract over what is on a topic:
 * - every event is there, and nothing else is;
 * - every copy (a duplicate included) is byte for byte the record of its outbox row, so a
 *   duplicate carries the same event id as its original;
 * - one payment's events share a partition, and their first copies are in creation order.
 * Returns how many copies were duplicates.
 */
export function expectDeliveredInOrder(
  events: readonly BuiltEvent[],
  messages: readonly TopicMessage[],
  records: ReadonlyMap<string, KafkaRecord>,
): number {
  const seen = new Set<string>();
  const firstCopies = new Map<string, string[]>();
  const partitions = new Map<string, Set<number>>();
  let duplicates = 0;
  const ordered = [...messages].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  for (const message of ordered) {
    const eventId = message.headers.ce_id ?? '';
    const record = records.get(eventId);
    if (!record) throw new Error(`unexpected event ${eventId} on the topic`);
    expect(message.key).toBe(record.key);
    expect(message.value).toBe(record.value);
    expect(message.headers).toEqual(record.headers);
    partitions.set(message.key, (partitions.get(message.key) ?? new Set()).add(message.partition));
    if (seen.has(eventId)) {
      duplicates++;
      continue;
    }
    seen.add(eventId);
    firstCopies.set(message.key, [...(firstCopies.get(message.key) ?? []), eventId]);
  }
  const missing = events.filter((event) => !seen.has(event.eventId));
  expect(missing.map((event) => event.eventId)).toEqual([]);
  const createdOrder = new Map<string, string[]>();
  for (const event of [...events].sort((a, b) => Number(a.id) - Number(b.id))) {
    createdOrder.set(event.aggregateId, [
      ...(createdOrder.get(event.aggregateId) ?? []),
      event.eventId,
    ]);
  }
  for (const [paymentId, created] of createdOrder) {
    expect(partitions.get(paymentId)?.size, `partitions of ${paymentId}`).toBe(1);
    expect(firstCopies.get(paymentId), `order of ${paymentId}`).toEqual(created);
  }
  return duplicates;
}
