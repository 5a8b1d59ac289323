import { outboxMetrics } from './outbox-metrics.js';
import {
  claimEvents,
  markPublished,
  recordFailedAttempt,
  releaseEvents,
} from './outbox-repository.js';
import { publishBatch, type PublishOutcome } from './publish-batch.js';
import {
  emptyRelayRunResult,
  type RelayClaim,
  type RelayContext,
  type RelayRunResult,
} from './relay-context.js';

/**
 * One round: claim a batch unless Kafka is away (claimIfKafka), publish it (publishBatch),
 * record the outcome (recordPublishOutcome: mark published, count, release). What `runOnce`
 * does; drainOutbox (relay-loop.ts) runs the same steps back to back, pipelined.
 */
export async function runOnce(ctx: RelayContext): Promise<RelayRunResult> {
  const claim = await claimIfKafka(ctx);
  if (!claim) return { ...emptyRelayRunResult(0), kafkaUnavailable: true };
  return recordPublishOutcome(ctx, claim, await publishBatch(ctx.producer, claim));
}

/** Leases the next batch under a fresh owner token. */
export async function claimBatch(ctx: RelayContext): Promise<RelayClaim> {
  const { RELAY_BATCH_SIZE, RELAY_LEASE_MS } = ctx.config;
  const started = performance.now();
  const claim = await claimEvents(ctx.db, RELAY_BATCH_SIZE, RELAY_LEASE_MS);
  return { ...claim, sendBy: started + RELAY_LEASE_MS - ctx.leaseMarginMs };
}

/** Claims a batch, unless Kafka is away: leases would only make other relays wait. */
export async function claimIfKafka(ctx: RelayContext): Promise<RelayClaim | undefined> {
  try {
    await ctx.producer.connected();
  } catch (error) {
    ctx.logger.debug({ err: error }, 'kafka unreachable');
    return undefined;
  }
  return claimBatch(ctx);
}

/**
 * Writes what Kafka did back to the claimed rows: marks acked rows published, counts an attempt
 * on (or parks) refused ones, gives back what Kafka did not take and what was not sent because
 * the lease was ending. Every write names the claim's owner token, so rows whose lease another
 * relay took over since are left alone.
 */
export async function recordPublishOutcome(
  ctx: RelayContext,
  claim: RelayClaim,
  outcome: PublishOutcome,
): Promise<RelayRunResult> {
  const result = emptyRelayRunResult(claim.events.length);
  await markAcked(ctx, claim.owner, outcome, result);
  await countRejected(ctx, claim.owner, outcome, result);
  await releaseUnsent(ctx, claim.owner, outcome, result);
  await releaseLeaseEnding(ctx, claim, outcome);
  return result;
}

async function markAcked(
  ctx: RelayContext,
  owner: string,
  { acked, ackedAt }: PublishOutcome,
  result: RelayRunResult,
): Promise<void> {
  if (acked.length === 0) return;
  await ctx.afterPublish?.(acked);
  const ids = acked.map((event) => event.id);
  const marked = await markPublished(ctx.db, owner, ids);
  if (marked < ids.length) {
    // Published all the same (same event ids): the relay now holding them republishes, and
    // consumers drop the duplicates.
    ctx.logger.debug({ lost: ids.length - marked }, 'outbox lease lost before the mark');
  }
  result.published = acked.length;
  outboxMetrics.published.inc(acked.length);
  for (const event of acked) {
    outboxMetrics.lag.observe(Math.max(0, ackedAt - event.createdAt.getTime()) / 1_000);
  }
}

async function countRejected(
  ctx: RelayContext,
  owner: string,
  outcome: PublishOutcome,
  result: RelayRunResult,
): Promise<void> {
  const { db, config, logger } = ctx;
  for (const { event, error } of outcome.rejected) {
    const attempts = event.attempts + 1;
    const message = error instanceof Error ? error.message : String(error);
    const retryInMs = ctx.retryDelayMs(attempts);
    const { parked } = await recordFailedAttempt(
      db,
      owner,
      event.id,
      message,
      config.RELAY_MAX_ATTEMPTS,
      retryInMs,
    );
    result.rejected++;
    outboxMetrics.failed.inc({ reason: 'rejected' });
    const context = { eventId: event.eventId, paymentId: event.aggregateId, attempts };
    if (parked) {
      result.parked++;
      outboxMetrics.parked.inc();
      logger.error({ ...context, err: error }, 'outbox event parked: kafka refuses it');
    } else {
      logger.warn({ ...context, err: error }, 'kafka refused an outbox event; will retry');
    }
  }
}

async function releaseUnsent(
  ctx: RelayContext,
  owner: string,
  { unsent, unavailable }: PublishOutcome,
  result: RelayRunResult,
): Promise<void> {
  if (unsent.length === 0) return;
  const reason = unavailable instanceof Error ? unavailable.message : 'kafka';
  await releaseEvents(
    ctx.db,
    owner,
    unsent.map((event) => event.id),
    `kafka unavailable: ${reason}`,
  );
  result.kafkaUnavailable = true;
  outboxMetrics.failed.inc({ reason: 'kafka_unavailable' }, unsent.length);
  ctx.logger.debug({ err: unavailable }, 'kafka unavailable during send');
}

/**
 * Rows not sent because the lease was ending: given back if this claim still holds them, so
 * they are claimable at once rather than when the lease ends (0 rows when another relay holds
 * them already; that relay sends them). No attempt is counted.
 */
async function releaseLeaseEnding(
  ctx: RelayContext,
  claim: RelayClaim,
  { leaseEnding }: PublishOutcome,
): Promise<void> {
  if (leaseEnding.length === 0) return;
  ctx.leaseEnding.dropped(leaseEnding.length, claim.sendBy + ctx.leaseMarginMs - performance.now());
  await releaseEvents(
    ctx.db,
    claim.owner,
    leaseEnding.map((event) => event.id),
    'not sent: the lease was ending',
  );
}
