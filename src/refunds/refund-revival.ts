import { reviveDeadJobs, type Revival } from '../jobs/job-store.js';
import { REFUND_JOBS } from '../jobs/job-table.js';
import type { Queryable } from '../platform/database/db.js';

/**
 * Revives the dead refund jobs of replayed `refund.created` copies (dlq:replay puts the copy back
 * on the payments topic with a replay token; settlement's consumer reads the topic and hands the
 * revivals here): the refund ids revived. The refund worker's next poll takes them.
 */
export async function reviveRefundJobs(
  db: Queryable,
  revivals: readonly Revival[],
): Promise<ReadonlySet<string>> {
  return new Set((await reviveDeadJobs(db, REFUND_JOBS, revivals)).keys());
}
