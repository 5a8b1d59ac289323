import { createRelayProducer } from '../../outbox/relay-kafka.js';
import { publish, type KafkaClient } from '../../platform/kafka/kafka.js';
import {
  DeadLettersInDoubtError,
  lettersOnTopic,
  settleEarlierTransaction,
  waitUnlessAborted,
  withoutLetters,
  type LetterBatches,
} from './dead-letter-in-doubt.js';
import type { SendDeadLetters, SendOptions } from './dead-letter-publisher.js';

/** The dead-letter publisher's Kafka producer: transactional, replaced after a failed send. */
export interface DeadLetterProducer {
  /** Connects (once). */
  connected: () => Promise<void>;
  /** Sends a batch of letters in one transaction; rejects when they are not all on the topic. */
  send: SendDeadLetters;
  close: () => Promise<void>;
}

/** A claim's lease end and the publisher's stop signal (SendOptions without `recheck`). */
type Claim = Omit<SendOptions, 'recheck'>;

/** A read of the topic gives up within the lease, and within 20 s (a frozen broker; a stop). */
function readTimeoutMs(leaseEndsAt: number): number {
  return Math.min(Math.max(leaseEndsAt - Date.now(), 1_000), 20_000);
}

/** The broker aborts a dead-letter transaction left open this long (transaction.timeout.ms). */
const TRANSACTION_TIMEOUT_MS = 30_000;
/**
 * How long after its first record a transaction is surely over: committed, or aborted by the
 * broker's timeout, which it checks every 10 s (transaction.abort.timed.out.transaction.cleanup
 * .interval.ms), with a margin. A send begins no transaction closer than this to its lease's end.
 */
export function transactionOverWithinMs(transactionTimeoutMs = TRANSACTION_TIMEOUT_MS): number {
  return transactionTimeoutMs + 10_000 + 10_000;
}

/**
 * Dead letters go to their topic exactly once for read-committed consumers (kafkajs' default,
 * dlq:replay, verify), DESIGN 49:
 * - each batch is sent in a Kafka transaction of a producer whose transactional id is this
 *   process's; a failed send drops the producer, and the next one's registration bumps the epoch,
 *   so the failed transaction is aborted and records a frozen broker appends late never show;
 * - a transaction begins only while the claim's lease has transactionOverWithinMs() left, so it
 *   is over before another process may claim the rows;
 * - a commit that went out unanswered (its coordinator killed) may have committed: the producer
 *   registers again (which settles it) and reads the topic; found letters count as sent. Not
 *   settled before the lease ends: DeadLettersInDoubtError, the rows stay leased;
 * - rows claimed before (`recheck`: a crash or a lost database answer after an earlier send) are
 *   looked for on the topic first, and only the missing letters are sent.
 * The client and producer are the relay's (bounded retries and request timeouts).
 */
export function createDeadLetterProducer(
  kafka: KafkaClient,
  clientId: string,
  transactionTimeoutMs = TRANSACTION_TIMEOUT_MS,
): DeadLetterProducer {
  const producer = createRelayProducer(kafka, {
    clientId,
    purpose: 'dead-letters',
    transactionTimeoutMs,
  });
  const overWithinMs = transactionOverWithinMs(transactionTimeoutMs);
  /** Registers the transactional id (a fresh producer) and leaves no transaction open. */
  const register = async () => {
    const transaction = await (await producer.connected()).transaction();
    await transaction.abort();
  };
  /**
   * Which of `batches`' letters are on the topic, once this process's last transaction is over.
   * A read ends at the last stable offset: a transaction still open (another process's, or one
   * left by a killed process until the broker times it out) hides what was committed after it.
   * So letters not found are looked for again once every transaction open at the first read is
   * over (transactionOverWithinMs), if the lease leaves time for it; else it throws.
   */
  const onTopic = async (batches: LetterBatches, { leaseEndsAt, signal }: Claim) => {
    await settleEarlierTransaction(register, leaseEndsAt, signal);
    const firstRead = Date.now();
    const found = await lettersOnTopic(kafka, batches, readTimeoutMs(leaseEndsAt));
    if (withoutLetters(batches, found).length === 0) return found;
    const again = firstRead + overWithinMs;
    if (leaseEndsAt - again < overWithinMs) {
      throw new Error('dead letters not found on the topic, and no time left to look again');
    }
    await waitUnlessAborted(again - Date.now(), signal);
    return lettersOnTopic(kafka, batches, readTimeoutMs(leaseEndsAt));
  };
  /** One transaction for `pending`: sent, or an error saying whether it may have committed. */
  const sendOnce = async (pending: LetterBatches, claim: Claim): Promise<void> => {
    const { leaseEndsAt } = claim;
    if (pending.length === 0) return;
    if (leaseEndsAt - Date.now() < overWithinMs) {
      throw new Error('dead-letter claim too close to its lease end to begin a transaction');
    }
    let committing = false;
    try {
      const transaction = await (await producer.connected()).transaction();
      await publish(transaction, pending);
      committing = true;
      await transaction.commit();
    } catch (error) {
      // No abort: the next producer's registration fences this one and aborts its
      // transaction, also when the broker is frozen now and answers only later.
      producer.discard();
      if (!committing) throw error;
      let found: Set<string>;
      try {
        found = await onTopic(pending, claim);
      } catch {
        throw new DeadLettersInDoubtError(error);
      }
      if (withoutLetters(pending, found).length > 0) throw error;
    }
  };
  return {
    connected: async () => {
      await producer.connected();
    },
    send: async (batches, { recheck, ...claim }) => {
      if (!recheck) return sendOnce(batches, claim);
      // Rows an earlier claim did not release: until their letters are known to be on the topic
      // or sent, any failure leaves them in doubt (leased; looked for again by the next claim).
      try {
        await sendOnce(withoutLetters(batches, await onTopic(batches, claim)), claim);
      } catch (error) {
        throw error instanceof DeadLettersInDoubtError ? error : new DeadLettersInDoubtError(error);
      }
    },
    close: () => producer.close(),
  };
}
