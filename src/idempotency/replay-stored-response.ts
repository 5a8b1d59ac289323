import { timingSafeEqual } from 'node:crypto';
import type { StoredResponse } from './stored-response.js';
import { IdempotencyKeyReused } from './idempotency-errors.js';

/** What an idempotent POST answers: the stored status and body, and whether it is a replay. */
export interface CreateOutcome {
  status: number;
  body: string;
  /** Absent when the POST created no payment (webhook endpoints, replays). */
  paymentId?: string;
  /** Set when the resource created is a refund (its Location is /refunds/{refundId}). */
  refundId?: string;
  replayed: boolean;
}

/** The outcome of a stored response, replayed or first. */
export function outcomeOf(stored: StoredResponse, replayed: boolean): CreateOutcome {
  return {
    status: stored.status,
    body: stored.body,
    ...(stored.paymentId === undefined ? {} : { paymentId: stored.paymentId }),
    ...(stored.refundId === undefined ? {} : { refundId: stored.refundId }),
    replayed,
  };
}

/** IdempotencyKeyReused unless the stored request is this request. */
export function assertSameRequest(storedFingerprintHex: string, fingerprint: Buffer): void {
  const stored = Buffer.from(storedFingerprintHex, 'hex');
  if (stored.length !== fingerprint.length || !timingSafeEqual(stored, fingerprint)) {
    throw new IdempotencyKeyReused();
  }
}

/** The stored answer for this request: a replay, or IdempotencyKeyReused for another body. */
export function replayStoredResponse(stored: StoredResponse, fingerprint: Buffer): CreateOutcome {
  assertSameRequest(stored.fingerprint, fingerprint);
  return outcomeOf(stored, true);
}
