import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId, type PaymentEventType } from '../../src/payments/payment-event-id.js';
import { createIdempotentProducer, type KafkaClient } from '../../src/platform/kafka/kafka.js';

// The consumer kit's integration tests: payment events as the relay writes them, sent to a
// test's own topic, and a bounded poll for the kit's counters.

/** A payment event's Kafka record (toKafkaRecord, the relay's), `extra` merged into its data. */
export function paymentRecord(paymentId: string, type: PaymentEventType, extra: object = {}) {
  return toKafkaRecord({
    eventId: paymentEventId(paymentId, type),
    eventType: type,
    aggregateId: paymentId,
    data: { id: paymentId, object: 'payment', amount: 4200, currency: 'EUR', ...extra },
    createdAt: new Date(),
  });
}

/** Sends `records` to `topic` in one batch, in order, acknowledged by every in-sync replica. */
export async function publishRecords(
  kafka: KafkaClient,
  topic: string,
  records: { key: string; value: string; headers?: Record<string, string> }[],
): Promise<void> {
  const producer = createIdempotentProducer(kafka);
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: records });
  } finally {
    await producer.disconnect();
  }
}

/** Polls until `done` holds (generous bound: a loaded machine is slow, never wrong). */
export async function until(done: () => boolean, what: string, ms = 45_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
