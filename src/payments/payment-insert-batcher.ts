import { currentTraceContext } from '../outbox/trace-context.js';
import { isDatabaseUnavailable } from '../platform/database/db-errors.js';
import type { Queryable } from '../platform/database/db.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import { insertPaymentBatch, type BatchedPaymentRecord } from './payment-insert-batch.js';
import {
  insertPaymentOnce,
  storedResponseOf,
  type InsertPaymentRecord,
} from './payment-insert-single.js';

export interface PaymentInsertBatcherSettings {
  db: Queryable;
  /** A batch is written once it has this many requests; 1 turns batching off. */
  maxRows: number;
  /** ...or this long after its first request arrived; 0 turns batching off. */
  windowMs: number;
  /**
   * ...or, while fewer than this many batches are being written, at once (the next turn of the
   * event loop): a lone request is not held back, and under load one batch is written while the
   * next one fills. 0: only the two bounds above.
   */
  inFlight: number;
}

interface Pending extends BatchedPaymentRecord {
  resolve: (stored: StoredResponse | null) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for POST /payments: the new-payment writes of concurrent requests in this
 * process go to Postgres together, as ONE statement (insertPaymentBatch), and each request is
 * answered with its own result: its stored response,
 * or null when its key was taken (the idempotency layer then replays, or answers 422, exactly
 * as after a single-row insert). One statement is one transaction, so each request's key
 * record, payment and outbox row still commit together (I1, I2); a key twice in one batch is
 * written once, for the first (ON CONFLICT DO NOTHING sees the command's own rows).
 *
 * When: at once while fewer than `inFlight` batches are being written (a lone request waits
 * for nothing and goes as the one-row statement), else as soon as one of them returns, or
 * `windowMs` after the first waiting write, or when `maxRows` are waiting. Under load one batch
 * is in Postgres while the next fills, so the API and Postgres work at the same time.
 *
 * A batch that fails (a row breaking a constraint, the statement timing out, a deadlock) is
 * written again request by request with insertPaymentOnce, so one bad request never fails its
 * neighbours. Only "Postgres unavailable" fails the whole batch at once: each request answers
 * 503 as it would have alone (a write whose commit went unanswered is found by the retry with
 * the same key), and retrying into an unreachable database would only double the wait.
 *
 * The write of a request whose deadline passed while it waited is still sent, as a single
 * request's write is after its deadline's 503 (request-deadline.ts): the retry finds it.
 * With maxRows <= 1 or windowMs = 0 this is insertPaymentOnce itself (batching off, for A/B).
 */
export function createPaymentInsertBatcher(
  settings: PaymentInsertBatcherSettings,
): InsertPaymentRecord {
  const { db, maxRows, windowMs, inFlight } = settings;
  if (maxRows <= 1 || windowMs <= 0) return (record) => insertPaymentOnce(db, record);

  let waiting: Pending[] = [];
  let timer: NodeJS.Timeout | undefined;
  let soon: NodeJS.Immediate | undefined;
  let writing = 0;

  const flush = () => {
    clearTimeout(timer);
    clearImmediate(soon);
    timer = undefined;
    soon = undefined;
    if (waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    writing++;
    void writeBatch(db, batch).finally(() => {
      writing--;
      // A slot is free: what waits goes now rather than at the end of its window.
      if (waiting.length > 0 && writing < inFlight) soon ??= setImmediate(flush);
    });
  };

  return (record) =>
    new Promise<StoredResponse | null>((resolve, reject) => {
      // Captured here, in the request's context: the write runs outside it.
      waiting.push({ record, trace: currentTraceContext(), resolve, reject });
      if (waiting.length >= maxRows) flush();
      else if (writing < inFlight) soon ??= setImmediate(flush);
      else timer ??= setTimeout(flush, windowMs);
    });
}

/** Writes `batch` and settles each request's promise; never rejects. */
async function writeBatch(db: Queryable, batch: Pending[]): Promise<void> {
  if (batch.length === 1) {
    await writeAlone(db, batch);
    return;
  }
  // One order for every batch's key records (merchant, key), so two concurrent batches sharing
  // keys (possible only when the Redis lock is bypassed) wait on each other in the same order
  // instead of deadlocking. Stable: of a key's twins the first to arrive is written.
  batch.sort(byKey);
  let written: Map<string, Date>;
  try {
    written = await insertPaymentBatch(db, batch);
  } catch (error) {
    if (isDatabaseUnavailable(error)) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    await writeAlone(db, batch);
    return;
  }
  for (const pending of batch) {
    const expiresAt = written.get(pending.record.payment.id);
    pending.resolve(expiresAt === undefined ? null : storedResponseOf(pending.record, expiresAt));
  }
}

/** Each request's own single-row write: its own outcome, whatever its neighbours' are. */
async function writeAlone(db: Queryable, batch: readonly Pending[]): Promise<void> {
  await Promise.all(
    batch.map((pending) =>
      insertPaymentOnce(db, pending.record, pending.trace).then(pending.resolve, pending.reject),
    ),
  );
}

function byKey(a: Pending, b: Pending): number {
  return (
    compare(a.record.merchantId, b.record.merchantId) ||
    compare(a.record.idempotencyKey, b.record.idempotencyKey)
  );
}

function compare(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}
