import { claimEvents, type Claim } from './outbox-repository.js';
import type { RelayContext } from './relay-context.js';

/** A claim as the relay holds it: its rows, its owner token, and when it must stop sending. */
export interface RelayClaim extends Claim {
  /**
   * performance.now() after which the rows are not sent: the claim's start plus RELAY_LEASE_MS
   * minus the lease margin (the longest a send can take). Measured from before the claim
   * statement was sent, on this process's monotonic clock: Postgres set the lease's end from a
   * later instant, so this is never later than the real end, whatever the clocks' offset.
   */
  sendBy: number;
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
