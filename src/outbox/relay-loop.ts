import { fullJitterDelay } from '../platform/resilience/backoff.js';
import type { Queryable } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { createOutageLog } from '../platform/resilience/outage-log.js';
import { outboxMetrics } from './outbox-metrics.js';
import { purgePublished, releaseEvents } from './outbox-repository.js';
import { createWakeupPolicy, requestWakeups } from './outbox-wakeups.js';
import { publishBatch } from './publish-batch.js';
import type { RelayClaim, RelayContext } from './relay-context.js';
import { claimBatch, claimIfKafka, recordPublishOutcome } from './relay-round.js';

/** Ceiling of the first pause after an iteration failed on Kafka or Postgres. */
const FIRST_BACKOFF_MS = 250;
/** A dependency back after an outage is used again within this long. */
const MAX_BACKOFF_MS = 5_000;
/** At 500 rows/s retention removes ~5,000 rows per round: a few statements every 10 s. */
const PURGE_INTERVAL_MS = 10_000;

/**
 * Loops until the waiter is stopped: drains while there is work, purges every
 * PURGE_INTERVAL_MS, and backs off (full jitter, so relays that failed together do not return
 * together) on failures. When a round finds nothing: a relay that claimed rows within the last
 * BUSY_WINDOW_MS looks again after BUSY_POLL_MS; an idle one asks writers to NOTIFY (before its
 * next round, which doubles as the look that closes the race with a writer that did not see the
 * request yet) and waits RELAY_POLL_INTERVAL_MS, which a wake-up cuts short (outbox-wakeups.ts).
 */
export async function runRelayLoop(ctx: RelayContext, waiter: LoopWaiter): Promise<void> {
  // One warning when rounds start failing, one per interval while they do, one line at the end.
  const outage = createOutageLog(
    'relay dependencies (kafka or postgres)',
    ctx.logger,
    ctx.config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
  );
  let failures = 0;
  let lastPurge = Number.NEGATIVE_INFINITY;
  const wakeups = createWakeupPolicy(ctx.config.RELAY_POLL_INTERVAL_MS);
  while (!waiter.isStopped()) {
    // Cleared before the round: a notification arriving during it triggers another round.
    waiter.clearWake();
    let drained: DrainResult | undefined;
    try {
      if (wakeups.shouldRequest(performance.now())) {
        await requestWakeups(ctx.db, wakeups.windowMs);
        wakeups.requested(performance.now());
      }
      const started = performance.now();
      // Under endless load, hand back to the loop now and then, so the purge still runs.
      drained = await drainOutbox(
        ctx,
        () => waiter.isStopped() || performance.now() - started >= PURGE_INTERVAL_MS,
      );
      if (performance.now() - lastPurge >= PURGE_INTERVAL_MS) {
        lastPurge = performance.now();
        await purgePublishedRows(ctx.db, ctx.config.OUTBOX_RETENTION_SECONDS, ctx.logger);
      }
    } catch (error) {
      outage.failed(error, { action: 'relay round failed; backing off' });
    }
    if (!drained || drained.kafkaUnavailable) {
      if (drained) outage.failed('kafka unreachable', { action: 'relay backing off' });
      if (drained) outboxMetrics.kafkaUnavailable.inc();
      failures++;
      await waiter.pause(
        fullJitterDelay(failures, FIRST_BACKOFF_MS, MAX_BACKOFF_MS, ctx.random),
        false,
      );
      continue;
    }
    outage.succeeded();
    failures = 0;
    // Publishing may have unblocked the next events of those payments: look again at once.
    if (drained.claimed > 0) {
      wakeups.claimed(performance.now());
      continue;
    }
    await waiter.pause(wakeups.idleWaitMs(performance.now()), true);
  }
}

interface DrainResult {
  /** Rows claimed in all. */
  claimed: number;
  kafkaUnavailable: boolean;
}

const NO_CLAIM: RelayClaim = { owner: '', events: [], sendBy: Number.POSITIVE_INFINITY };

/**
 * Rounds back to back until a claim comes back empty, with Postgres and Kafka working at the
 * same time: the next batch is claimed while the current one is sent, and the current one is
 * marked while the next one is sent. The next batch cannot hold a later event of a payment in
 * the current one: that event stays behind its predecessor until the predecessor's mark
 * commits. Hands back once `handBack()` says so (stop, or time for the purge).
 */
async function drainOutbox(ctx: RelayContext, handBack: () => boolean): Promise<DrainResult> {
  const first = await claimIfKafka(ctx);
  if (!first) return { claimed: 0, kafkaUnavailable: true };
  let claim = first;
  let claimed = 0;
  let marking: Promise<unknown> = Promise.resolve();
  let prefetched: Promise<RelayClaim | Error> = Promise.resolve(NO_CLAIM);
  try {
    while (claim.events.length > 0) {
      claimed += claim.events.length;
      if (claim.events.length === ctx.config.RELAY_BATCH_SIZE) ctx.onBacklog?.();
      prefetched = errorAsValue(handBack() ? Promise.resolve(NO_CLAIM) : claimBatch(ctx));
      // A claim is sent only while its lease has the margin left (checked before every send):
      // a prefetched batch that waited too long behind a slow send is given back, not sent.
      const outcome = await publishBatch(ctx.producer, claim);
      await marking; // one batch being marked at a time
      marking = recordPublishOutcome(ctx, claim, outcome);
      // Awaited on the next turn or below; until then a rejection must not count as unhandled.
      marking.catch(() => undefined);
      if (outcome.unsent.length > 0) {
        await marking;
        return { claimed, kafkaUnavailable: true };
      }
      const following = await prefetched;
      prefetched = Promise.resolve(NO_CLAIM);
      if (following instanceof Error) throw following;
      claim = following;
    }
    await marking;
    return { claimed, kafkaUnavailable: false };
  } finally {
    // Leaving early: a prefetched batch that will not be sent now goes back at once.
    await giveBack(ctx, await prefetched);
  }
}

/** Releases a prefetched batch that will not be sent now (best effort: leases expire anyway). */
async function giveBack(ctx: RelayContext, claim: RelayClaim | Error): Promise<void> {
  if (claim instanceof Error || claim.events.length === 0) return;
  await releaseEvents(
    ctx.db,
    claim.owner,
    claim.events.map((event) => event.id),
    'released: the batch before it failed',
  ).catch(() => undefined);
}

/** The promise's value, or its rejection as a value: for work started before it is awaited. */
function errorAsValue<T>(promise: Promise<T>): Promise<T | Error> {
  return promise.catch((error: unknown) =>
    error instanceof Error ? error : new Error(String(error)),
  );
}

/** Rows per DELETE: each statement holds its row locks for milliseconds, not seconds. */
export const PURGE_BATCH_SIZE = 1_000;
/** Bounds one round, so a first purge of a large table does not hold publishing back. */
const PURGE_MAX_BATCHES = 20;

/** Deletes published rows older than the retention, a batch at a time, a bounded number. */
async function purgePublishedRows(
  db: Queryable,
  retentionSeconds: number,
  logger: Logger,
): Promise<void> {
  let deleted = 0;
  for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
    const count = await purgePublished(db, retentionSeconds, PURGE_BATCH_SIZE);
    deleted += count;
    if (count < PURGE_BATCH_SIZE) break;
  }
  if (deleted > 0) logger.debug({ deleted }, 'purged published outbox rows');
}

/**
 * The relay loop's waiting: a wake-up cuts an idle wait short, never a backoff; stop cuts both
 * and makes every later wait return at once.
 */
export interface LoopWaiter {
  /** Waits `ms`; an idle wait ends early on wake(), and is skipped if woken since clearWake(). */
  pause: (ms: number, idle: boolean) => Promise<void>;
  /** A hint that work may be waiting. */
  wake: () => void;
  /** Forgets earlier wake-ups (called before a round: one arriving during it counts). */
  clearWake: () => void;
  stop: () => void;
  isStopped: () => boolean;
}

export function createLoopWaiter(): LoopWaiter {
  let stopped = false;
  let woken = false;
  let endIdleWait: (() => void) | undefined;
  let endAnyWait: (() => void) | undefined;

  function pause(ms: number, idle: boolean): Promise<void> {
    if (stopped || (idle && woken)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        endIdleWait = undefined;
        endAnyWait = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      endAnyWait = done;
      if (idle) endIdleWait = done;
    });
  }

  return {
    pause,
    wake: () => {
      woken = true;
      endIdleWait?.();
    },
    clearWake: () => {
      woken = false;
    },
    stop: () => {
      stopped = true;
      endAnyWait?.();
    },
    isStopped: () => stopped,
  };
}
