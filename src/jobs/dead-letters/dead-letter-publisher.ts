import type { Pool } from '../../platform/database/db.js';
import type { ProducerRecord } from '../../platform/kafka/kafka.js';
import type { Logger } from '../../platform/telemetry/logger.js';
import { DeadLettersInDoubtError } from './dead-letter-in-doubt.js';
import {
  claimUnpublished,
  markInDoubt,
  markPublished,
  markUnsent,
  purgePublishedDeadLetters,
} from './dead-letter-store.js';

/** How one claimed batch may be sent (dead-letter-producer). */
export interface SendOptions {
  /**
   * An earlier claim of some of these rows may have sent them (a crash or a lost answer after
   * the send, before the mark): letters already on the topic are not sent again.
   */
  recheck: boolean;
  /** When the claim's lease ends (epoch ms): no transaction may still be open after it. */
  leaseEndsAt: number;
  /** The publisher is stopping: stop waiting to learn an earlier send's outcome (in doubt). */
  signal: AbortSignal;
}

/**
 * Sends one batch of dead letters; resolves once they are all on the topic (sent now or found
 * there). Throws DeadLettersInDoubtError when a commit went unanswered and its outcome could not
 * be learnt: the rows then keep their lease.
 */
export type SendDeadLetters = (
  batches: readonly { topic: string; records: readonly ProducerRecord[] }[],
  options: SendOptions,
) => Promise<void>;

export interface DeadLetterPublisherDeps {
  pool: Pool;
  /** A bounded send (dead-letter-producer): it fails, it does not hang, when Kafka is frozen. */
  send: SendDeadLetters;
  logger: Logger;
  /** The wait before sending again after `failures` failed sends in a row. */
  retryDelayMs: (failures: number) => number;
  /** When nothing wakes the publisher: a letter another process stored, a missed wake. */
  pollMs: number;
  batchSize?: number;
  /**
   * How long a claim holds its rows. The producer begins no transaction it could not finish
   * within it, so another process claims them only once the earlier send is over.
   */
  leaseMs?: number;
  /** Published letters are deleted after this long (DEAD_LETTER_RETENTION_SECONDS). */
  retentionSeconds?: number;
  /** How often the loop purges (default a minute). */
  purgeIntervalMs?: number;
}

export interface DeadLetterPublisher {
  /** A letter was stored: publish it now. */
  wake: () => void;
  /** Publishes what is due once: the step tests drive. Returns how many letters Kafka took. */
  publishDue: () => Promise<number>;
  start: () => void;
  /** Stops the loop and waits for the send in flight (bounded by the producer). */
  stop: () => Promise<void>;
}

/**
 * The dead letters' relay: claims unpublished letters in id order, sends them in one bounded
 * transaction, marks them published. A failed send leaves them unpublished with a backoff. A
 * claim of rows claimed before (a crash, a lost answer, a database failover between the send and
 * the mark) reads the topic first and sends only the letters it does not hold, so each letter is
 * on the topic once (I7, DESIGN 49).
 */
export function createDeadLetterPublisher(deps: DeadLetterPublisherDeps): DeadLetterPublisher {
  const batchSize = deps.batchSize ?? 100;
  const leaseMs = deps.leaseMs ?? 180_000;
  const purgeIntervalMs = deps.purgeIntervalMs ?? 60_000;
  let lastPurge = Number.NEGATIVE_INFINITY;
  let failures = 0;
  // Read through a function: the loop's checks see changes made by stop() and wake().
  const state = { running: false, woken: false };
  const running = () => state.running;
  const woken = () => state.woken;
  let wakeUp: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let stopping = new AbortController();

  async function publishDue(): Promise<number> {
    let sent = 0;
    for (;;) {
      // The lease is counted from before the claim: the database's clock may be ahead.
      const leaseEndsAt = Date.now() + leaseMs;
      const letters = await claimUnpublished(deps.pool, batchSize, leaseMs);
      if (letters.length === 0) return sent;
      const ids = letters.map((letter) => letter.id);
      const byTopic = new Map<string, ProducerRecord[]>();
      for (const { topic, record } of letters) {
        byTopic.set(topic, [...(byTopic.get(topic) ?? []), record]);
      }
      const recheck = letters.some((letter) => letter.unreleased);
      try {
        await deps.send(
          [...byTopic].map(([topic, records]) => ({ topic, records })),
          { recheck, leaseEndsAt, signal: stopping.signal },
        );
      } catch (error) {
        failures++;
        if (error instanceof DeadLettersInDoubtError) {
          deps.logger.warn(
            { err: error, dead_letters: ids.length },
            'dead-letter commit unanswered and not settled; the letters stay leased and are looked for on the topic before they are sent again',
          );
          await markInDoubt(deps.pool, letters, error);
          throw error;
        }
        const delayMs = deps.retryDelayMs(failures);
        deps.logger.warn(
          { err: error, dead_letters: ids.length, retry_in_ms: delayMs },
          'dead-letter publish failed; kept in the database and sent again later',
        );
        await markUnsent(deps.pool, letters, error, delayMs);
        throw error;
      }
      failures = 0;
      await markPublished(deps.pool, letters);
      sent += ids.length;
      if (letters.length < batchSize) return sent;
    }
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
      wakeUp = done;
    });
  }

  async function run(): Promise<void> {
    while (running()) {
      state.woken = false;
      let waitMs = deps.pollMs;
      try {
        await publishDue();
        if (deps.retentionSeconds !== undefined && Date.now() - lastPurge >= purgeIntervalMs) {
          lastPurge = Date.now();
          const deleted = await purgePublishedDeadLetters(deps.pool, deps.retentionSeconds);
          if (deleted > 0) deps.logger.debug({ deleted }, 'purged published dead letters');
        }
      } catch (error) {
        // A failed send was logged and its rows rescheduled; a database error waits a poll.
        if (failures === 0) deps.logger.warn({ err: error }, 'dead-letter publisher step failed');
        waitMs = Math.min(deps.pollMs, deps.retryDelayMs(Math.max(failures, 1)));
      }
      if (running() && !woken()) await sleep(waitMs);
    }
  }

  return {
    wake: () => {
      state.woken = true;
      wakeUp?.();
    },
    publishDue,
    start: () => {
      if (state.running) return;
      state.running = true;
      if (stopping.signal.aborted) stopping = new AbortController();
      loop = run();
    },
    stop: async () => {
      state.running = false;
      stopping.abort();
      wakeUp?.();
      await loop;
    },
  };
}
