import type { Queryable } from '../platform/database/db.js';
import type { JobTable } from './job-table.js';

/** A dead job to revive, and the dlq:replay token of the copy that asks for it. */
export interface Revival {
  id: string;
  token: string;
}

/**
 * dlq:replay's copies: a dead job comes back (pending, attempts reset, a new retry window, and an
 * inquiry first: DESIGN 106, however old the letter) once per replay token. A
 * stray duplicate has no token; a second delivery of the same replayed copy has a token the job
 * has already been revived with. A job that is not dead is left alone. Returns the revived job
 * ids with the token that revived each.
 */
export async function reviveDeadJobs(
  db: Queryable,
  jobs: JobTable,
  revivals: readonly Revival[],
): Promise<Map<string, string>> {
  const lastTokenPerJob = new Map(revivals.map((r) => [r.id, r.token]));
  if (lastTokenPerJob.size === 0) return new Map();
  const { rows } = await db.query<{ job_id: string; replay_token: string }>({
    name: `${jobs.kind}.revive`,
    text: `UPDATE ${jobs.table} j
        SET state = 'pending', attempts = 0, next_attempt_at = now(), locked_until = NULL,
            lease_owner = NULL, replay_token = r.token, revived_at = now(),
            needs_inquiry = true, first_failure_at = NULL
       FROM unnest($1::uuid[], $2::text[]) AS r(job_id, token)
      WHERE j.${jobs.idColumn} = r.job_id AND j.state = 'dead'
        AND j.replay_token IS DISTINCT FROM r.token
     RETURNING j.${jobs.idColumn} AS job_id, j.replay_token`,
    values: [[...lastTokenPerJob.keys()], [...lastTokenPerJob.values()]],
  });
  return new Map(rows.map((row) => [row.job_id, row.replay_token]));
}
