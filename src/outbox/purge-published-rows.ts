import type { Queryable } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { purgePublished } from './outbox-repository.js';

/** Rows per DELETE: each statement holds its row locks for milliseconds, not seconds. */
export const PURGE_BATCH_SIZE = 1_000;
/** Bounds one round, so a first purge of a large table does not hold publishing back. */
const PURGE_MAX_BATCHES = 20;

/** Deletes published rows older than the retention, a batch at a time, a bounded number. */
export async function purgePublishedRows(
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
