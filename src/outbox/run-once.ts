import { claimIfKafka } from './claim-batch.js';
import { publishClaimed } from './publish-claimed.js';
import { recordPublishOutcome } from './record-publish-outcome.js';
import { emptyRelayRunResult, type RelayContext, type RelayRunResult } from './relay-context.js';

/** One round: claim a batch, publish it, record the outcome (mark published, count, release). */
export async function runOnce(ctx: RelayContext): Promise<RelayRunResult> {
  const claim = await claimIfKafka(ctx);
  if (!claim) return { ...emptyRelayRunResult(0), kafkaUnavailable: true };
  return recordPublishOutcome(ctx, claim, await publishClaimed(ctx.producer, claim));
}
