import { isRecordRejected, publish } from '../platform/kafka.js';
import { toKafkaRecord } from './cloud-event.js';
import type { ClaimedEvent } from './outbox-repository.js';
import type { RelayProducer } from './relay-producer.js';

/** What Kafka did with a claimed batch. */
export interface PublishOutcome {
  acked: ClaimedEvent[];
  rejected: { event: ClaimedEvent; error: unknown }[];
  /** Not sent because Kafka is unreachable. */
  unsent: ClaimedEvent[];
  unavailable?: unknown;
  /** When the send finished (Date.now()): the end of the lag measurement. */
  ackedAt: number;
}

/** Publishes claimed rows (see sendSplitting); never throws. */
export async function publishClaimed(
  producer: RelayProducer,
  events: ClaimedEvent[],
): Promise<PublishOutcome> {
  const outcome: PublishOutcome = { acked: [], rejected: [], unsent: [], ackedAt: 0 };
  if (events.length > 0) await sendSplitting(producer, events, outcome);
  outcome.ackedAt = Date.now();
  return outcome;
}

async function sendEvents(producer: RelayProducer, events: readonly ClaimedEvent[]): Promise<void> {
  const byTopic = new Map<string, ReturnType<typeof toKafkaRecord>[]>();
  for (const event of events) {
    const records = byTopic.get(event.topic) ?? [];
    records.push(toKafkaRecord(event));
    byTopic.set(event.topic, records);
  }
  const batches = [...byTopic].map(([topic, records]) => ({ topic, records }));
  await publish(await producer.connected(), batches);
}

/**
 * Sends the batch; when the broker refuses a record, halves the batch until the refused rows
 * are isolated, so one poison row costs a few extra sends and never holds back the others.
 * Records of a refused request may already sit on some partitions; sending them again makes
 * duplicates with the same event id, which consumers drop. Returns false once Kafka is
 * unreachable (the rest of the batch is then unsent).
 */
async function sendSplitting(
  producer: RelayProducer,
  events: ClaimedEvent[],
  outcome: PublishOutcome,
): Promise<boolean> {
  try {
    await sendEvents(producer, events);
    outcome.acked.push(...events);
    return true;
  } catch (error) {
    producer.discard();
    const [only] = events;
    if (!isRecordRejected(error)) {
      outcome.unsent.push(...events);
      outcome.unavailable = error;
      return false;
    }
    if (events.length === 1 && only) {
      outcome.rejected.push({ event: only, error });
      return true;
    }
    const half = Math.ceil(events.length / 2);
    if (!(await sendSplitting(producer, events.slice(0, half), outcome))) {
      outcome.unsent.push(...events.slice(half));
      return false;
    }
    return sendSplitting(producer, events.slice(half), outcome);
  }
}
