import {
  readTopicToEnd,
  type KafkaClient,
  type ProducerRecord,
} from '../../platform/kafka/kafka.js';

/** A batch of letters as the dead-letter producer sends it. */
export type LetterBatches = readonly { topic: string; records: readonly ProducerRecord[] }[];

/** How long the producer keeps registering again to settle a commit it got no answer to. */
const RESOLVE_WITHIN_MS = 60_000;
const REGISTER_RETRY_MS = 1_000;

/** One letter's identity on its topic: the same bytes under the same key. */
export function letterIdentity(topic: string, key: string, value: string | Buffer): string {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return `${topic}\u0000${key}\u0000${bytes.toString('base64')}`;
}

/** `batches` without the letters whose identity is in `known` (empty batches dropped). */
export function withoutLetters(batches: LetterBatches, known: ReadonlySet<string>): LetterBatches {
  return batches
    .map(({ topic, records }) => ({
      topic,
      records: records.filter((r) => !known.has(letterIdentity(topic, r.key, r.value))),
    }))
    .filter((batch) => batch.records.length > 0);
}

/**
 * A transaction whose commit was sent and not answered (its coordinator died: a leader kill) may
 * have committed. Registering the transactional id again makes the new coordinator finish it,
 * committed or aborted; after that a read-committed read of the topic says which: the letters'
 * identities found there (all of the batch or none: a transaction is atomic). Registers again
 * until it works or RESOLVE_WITHIN_MS passed (then it throws: still in doubt).
 */
export async function lettersCommitted(
  kafka: KafkaClient,
  register: () => Promise<unknown>,
  batches: LetterBatches,
): Promise<Set<string>> {
  const deadline = Date.now() + RESOLVE_WITHIN_MS;
  for (;;) {
    try {
      await register();
      break;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, REGISTER_RETRY_MS));
    }
  }
  const wanted = new Set(
    batches.flatMap(({ topic, records }) =>
      records.map((r) => letterIdentity(topic, r.key, r.value)),
    ),
  );
  const found = new Set<string>();
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const topic of new Set(batches.map((batch) => batch.topic))) {
      await readTopicToEnd(kafka, admin, topic, (record) => {
        const identity = letterIdentity(topic, record.key ?? '', record.value ?? Buffer.alloc(0));
        if (wanted.has(identity)) found.add(identity);
      });
    }
  } finally {
    await admin.disconnect();
  }
  return found;
}
