import { claimEvents, type Claim } from './outbox-repository.js';
import type { RelayContext } from './relay-context.js';

/** Leases the next batch under a fresh owner token. */
export function claimBatch(ctx: RelayContext): Promise<Claim> {
  return claimEvents(ctx.db, ctx.config.RELAY_BATCH_SIZE, ctx.config.RELAY_LEASE_MS);
}

/** Claims a batch, unless Kafka is away: leases would only make other relays wait. */
export async function claimIfKafka(ctx: RelayContext): Promise<Claim | undefined> {
  try {
    await ctx.producer.connected();
  } catch (error) {
    ctx.logger.debug({ err: error }, 'kafka unreachable');
    return undefined;
  }
  return claimBatch(ctx);
}
