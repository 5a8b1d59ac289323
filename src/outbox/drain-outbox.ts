import { claimBatch, claimIfKafka, type RelayClaim } from './claim-batch.js';
import { releaseEvents } from './outbox-repository.js';
import { publishClaimed } from './publish-claimed.js';
import { recordPublishOutcome } from './record-publish-outcome.js';
import type { RelayContext } from './relay-context.js';

export interface DrainResult {
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
export async function drainOutbox(
  ctx: RelayContext,
  handBack: () => boolean,
): Promise<DrainResult> {
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
      const outcome = await publishClaimed(ctx.producer, claim);
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
