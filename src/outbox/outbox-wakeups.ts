import type { Queryable } from '../platform/database/db.js';

/**
 * Asks every outbox writer to NOTIFY for the next `windowMs` (migration 0016): the trigger
 * notifies only while `wanted_until` is ahead. Several relays may ask; the latest end wins.
 */
export async function requestWakeups(db: Queryable, windowMs: number): Promise<void> {
  await db.query(
    `UPDATE outbox_wakeups
        SET wanted_until = greatest(wanted_until,
                                    now() + make_interval(secs => $1::double precision / 1000))`,
    [windowMs],
  );
}

/**
 * When a relay loop should ask for wake-ups, and how it waits meanwhile. A notifying commit
 * holds a cluster-wide lock until its WAL flush, so notifications are asked for only by an idle
 * relay; a busy one polls every BUSY_POLL_MS instead and lets writers commit in groups.
 */
export interface WakeupPolicy {
  /** A round claimed rows: the relay is busy for the next BUSY_WINDOW_MS. */
  claimed: (now: number) => void;
  /** Before a round: whether to ask for wake-ups first (idle, and the window is ending). */
  shouldRequest: (now: number) => boolean;
  /** The window the relay asked for, from `now`. */
  requested: (now: number) => void;
  /** How long to wait after a round that claimed nothing. */
  idleWaitMs: (now: number) => number;
  /** The window to ask for. */
  readonly windowMs: number;
}

/** How often a busy relay looks when a round came back empty. */
export const BUSY_POLL_MS = 10;
/** A relay that claimed rows this recently counts as busy. */
export const BUSY_WINDOW_MS = 250;

export function createWakeupPolicy(pollIntervalMs: number): WakeupPolicy {
  // Long enough to be asked for rarely; the margin keeps it open through the next idle poll.
  const windowMs = Math.max(10_000, 4 * pollIntervalMs);
  const margin = pollIntervalMs + 1_000;
  let busyUntil = Number.NEGATIVE_INFINITY;
  let openUntil = Number.NEGATIVE_INFINITY;
  return {
    windowMs,
    claimed: (now) => {
      busyUntil = now + BUSY_WINDOW_MS;
    },
    shouldRequest: (now) => now >= busyUntil && openUntil - now < margin,
    requested: (now) => {
      openUntil = now + windowMs;
    },
    idleWaitMs: (now) =>
      now < busyUntil ? Math.min(BUSY_POLL_MS, pollIntervalMs) : pollIntervalMs,
  };
}
