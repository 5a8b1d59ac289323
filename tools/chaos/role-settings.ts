import { relaySendBoundMs } from '../../src/outbox/relay-kafka.js';
import type { Role } from './role-fleet.js';

/**
 * The run's relays bound each Kafka request at 2 s (default 10 s), so their lease can be 20 s
 * instead of the default minute: a lease must exceed the longest send (relaySendBoundMs, 15 s at
 * 2 s) or the relay refuses to start, and 5 s more leave a claim time to be sent on a busy
 * machine. The relay pause then outlasts the lease in 23 s, not 63 s, in a run CI waits for.
 */
const RELAY_KAFKA_REQUEST_TIMEOUT_MS = 2_000;
export const RELAY_LEASE_MS = relaySendBoundMs(RELAY_KAFKA_REQUEST_TIMEOUT_MS) + 5_000;
export const RELAY_PAUSE_SECONDS = Math.ceil(RELAY_LEASE_MS / 1000) + 3;
/**
 * Settlement's Kafka requests are bounded at 3 s in a run (default 10 s): its bounded
 * dead-letter send then fails about 12 s into a freeze instead of about 35 s, and the
 * dead-letter freeze, which holds until one did, stays short enough for CI. (Fetches are
 * bounded by their own wait, not by this.)
 */
const SETTLEMENT_KAFKA_REQUEST_TIMEOUT_MS = 3_000;

/**
 * A manual payment's window in a run: the capture race's payments left alone expire (voided,
 * canceled `expired`) within it, while a race that began at the authorization is long over.
 */
export const CHAOS_AUTHORIZATION_WINDOW_SECONDS = 60;

/** REFUND_MAX_ATTEMPTS as the run's settlement processes read it (they inherit this env). */
export function refundMaxAttempts(): number {
  const value = Number(process.env.REFUND_MAX_ATTEMPTS ?? '5');
  return Number.isInteger(value) && value > 0 ? value : 5;
}

/** What a run sets for a role's processes beyond the shared environment (relay and settlement). */
export function roleSettings(role: Role, acquirerUrl: string): Record<string, string> {
  if (role === 'relay') {
    return {
      RELAY_LEASE_MS: String(RELAY_LEASE_MS),
      KAFKA_REQUEST_TIMEOUT_MS: String(RELAY_KAFKA_REQUEST_TIMEOUT_MS),
    };
  }
  if (role !== 'settlement') return {};
  return {
    KAFKA_REQUEST_TIMEOUT_MS: String(SETTLEMENT_KAFKA_REQUEST_TIMEOUT_MS),
    ACQUIRER_URL: acquirerUrl,
    // The dead-letter fault needs tok_unavailable to exhaust within seconds: the
    // attempt guard and backoff of before issue 36, not its day-long window.
    SETTLEMENT_MAX_ATTEMPTS: process.env.SETTLEMENT_MAX_ATTEMPTS ?? '5',
    REFUND_MAX_ATTEMPTS: String(refundMaxAttempts()),
    SETTLEMENT_BACKOFF_CAP_MS: '30000',
    REFUND_BACKOFF_CAP_MS: '30000',
    AUTHORIZATION_WINDOW_SECONDS: String(CHAOS_AUTHORIZATION_WINDOW_SECONDS),
  };
}
