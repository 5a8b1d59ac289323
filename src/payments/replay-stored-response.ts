import { timingSafeEqual } from 'node:crypto';
import type { StoredResponse } from '../idempotency/stored-response.js';
import { IdempotencyKeyReused } from './payment-errors.js';

/** What POST /payments answers: the stored status and body, and whether it is a replay. */
export interface CreateOutcome {
  status: number;
  body: string;
  paymentId: string;
  replayed: boolean;
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
  return {
    status: stored.status,
    body: stored.body,
    paymentId: stored.paymentId,
    replayed: true,
  };
}
