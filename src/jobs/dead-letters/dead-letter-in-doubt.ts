import {
  readTopicToEnd,
  type KafkaClient,
  type ProducerRecord,
} from '../../platform/kafka/kafka.js';

/** A batch of letters as the dead-letter producer sends it. */
export type LetterBatches = readonly { topic: string; records: readonly ProducerRecord[] }[];

const REGISTER_RETRY_MS = 1_000;

/**
 * A commit was sent and no answer came back, and its outcome could not be learnt before the
 * claim's lease ends: the letters may be on the topic. Their rows keep the lease (the publisher
 * does not release them), and the next claim reads the topic before sending (DESIGN 49).
 */
export class DeadLettersInDoubtError extends Error {
  constructor(cause: unknown) {
    super(
      `dead-letter commit unanswered and not settled: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'DeadLettersInDoubtError';
  }
}

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
 * Registers the transactional id until it works or `until` (epoch ms) passed, then throws the
 * last error. Registering makes the transaction coordinator finish the id's earlier transaction,
 * committed (its commit was received) or aborted (it was not): after it, that transaction's
 * outcome is final and a read-committed read of the topic shows it.
 */
export async function settleEarlierTransaction(
  register: () => Promise<unknown>,
  until: number,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    try {
      await register();
      return;
    } catch (error) {
      if (Date.now() + REGISTER_RETRY_MS >= until || signal.aborted) throw error;
      await waitUnlessAborted(REGISTER_RETRY_MS, signal);
    }
  }
}

/** Waits `ms`, or less when `signal` aborts; throws when it aborted. */
export async function waitUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, Math.max(ms, 0));
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
  signal.throwIfAborted();
}

/**
 * The identities of `batches`' letters that are on their topics: a read-committed read of each
 * topic to its end. Only committed letters count, so the caller settles any transaction of its
 * own that may still hold them first (settleEarlierTransaction); another process's transaction
 * is over once its claim's lease ended (the producer begins none it could not finish by then).
 */
export async function lettersOnTopic(
  kafka: KafkaClient,
  batches: LetterBatches,
  timeoutMs: number,
): Promise<Set<string>> {
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
      await readTopicToEnd(
        kafka,
        admin,
        topic,
        (record) => {
          const identity = letterIdentity(topic, record.key ?? '', record.value ?? Buffer.alloc(0));
          if (wanted.has(identity)) found.add(identity);
        },
        timeoutMs,
      );
    }
  } finally {
    await admin.disconnect();
  }
  return found;
}
