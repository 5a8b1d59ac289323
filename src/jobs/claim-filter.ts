import { CLAIMABLE_AT, type JobTable } from './job-table.js';

/**
 * A kind's claim rules beyond due-and-not-leased (webhooks use them): the SQL job-store.ts
 * splices into its claim and next-due statements.
 */

/**
 * A kind's extra claim rules (webhooks; settlement and refunds have none): a predicate a due job
 * must also meet, and a cap on the jobs in flight per group (a column of the job table).
 */
export interface ClaimFilter {
  /** `AND ...` over the job table's columns, spelled `${table}.column` (trusted SQL, no params). */
  due?: string;
  /**
   * At most `cap` jobs of one `column` value (a uuid column) in flight in this worker, `busy`
   * counting them (the worker keeps the count: JobHandler.group).
   */
  group?: { column: string; cap: number; busy: ReadonlyMap<string, number> };
  /**
   * With `group`: at most `cap` jobs in flight per owner of groups (a merchant of endpoints)
   * across every worker, counted in the table. `owners` is SQL for rows (grp, owner); `held` for
   * rows (owner, in_flight), the jobs leased now per owner (trusted SQL, no params). An owner
   * at its cap is left out of the scan; a batch takes at most each owner's free slots.
   */
  share?: { owners: string; held: string; cap: number };
}

/** The inner query's extra conditions, and their parameters from `$first`. */
export function filterSql(
  jobs: JobTable,
  filter: ClaimFilter | undefined,
  first: number,
): { where: string; values: unknown[] } {
  const group = filter?.group;
  let where = filter?.due ?? '';
  if (!group) return { where, values: [] };
  const saturated = [...group.busy].filter(([, n]) => n >= group.cap).map(([key]) => key);
  where += ` AND ${jobs.table}.${group.column} <> ALL($${String(first)}::uuid[])`;
  const share = filter.share;
  if (!share) return { where, values: [saturated] };
  where += ` AND ${jobs.table}.${group.column} <> ALL(ARRAY(
      SELECT o.grp FROM ${share.owners} o JOIN (${share.held}) h ON h.owner = o.owner
       WHERE h.in_flight >= $${String(first + 1)}::int))`;
  return { where, values: [saturated, share.cap] };
}

/**
 * The due jobs a claim takes, locked (FOR UPDATE SKIP LOCKED: two workers never take the same
 * one), oldest claimable first, at most $1. With a group cap, the locked candidates are ranked
 * within their group and a group takes only its free slots (from `$g`: groups in flight, their
 * counts, the cap; saturated groups are already excluded by the scan): a window function cannot
 * sit beside FOR UPDATE, so it ranks the locked rows one level up. With a share, what fits is
 * ranked again within its owner, which takes only its free slots across all workers (the share's
 * cap is the parameter before `$g`; owners at their cap are already excluded by the scan).
 */
export function dueSubquery(
  jobs: JobTable,
  where: string,
  filter: ClaimFilter | undefined,
  g: number,
) {
  const { table, idColumn } = jobs;
  const groupColumn = filter?.group?.column;
  if (groupColumn === undefined) {
    return `(SELECT ${idColumn}, attempts FROM ${table}
              WHERE state = 'pending' AND ${CLAIMABLE_AT} <= now()${where}
              ORDER BY ${CLAIMABLE_AT} LIMIT $1
              FOR UPDATE SKIP LOCKED)`;
  }
  const [busyKeys, busyCounts, cap] = [g, g + 1, g + 2].map((n) => `$${String(n)}`);
  const fit = `(SELECT ranked.${idColumn}, ranked.attempts, ranked.grp, ranked.claimable_at
              FROM (SELECT c.*, row_number() OVER (PARTITION BY c.grp ORDER BY c.claimable_at)
                             AS grp_rank
                      FROM (SELECT ${idColumn}, attempts, ${groupColumn} AS grp,
                                   ${CLAIMABLE_AT} AS claimable_at
                              FROM ${table}
                             WHERE state = 'pending' AND ${CLAIMABLE_AT} <= now()${where}
                             ORDER BY ${CLAIMABLE_AT} LIMIT $1
                             FOR UPDATE SKIP LOCKED) c) ranked
              LEFT JOIN unnest(${busyKeys}::uuid[], ${busyCounts}::int[]) AS busy(grp, in_flight)
                ON busy.grp = ranked.grp
             WHERE ranked.grp_rank <= ${cap} - coalesce(busy.in_flight, 0))`;
  const share = filter?.share;
  if (!share) return fit;
  return `(SELECT mine.${idColumn}, mine.attempts
              FROM (SELECT fit.*, o.owner, row_number() OVER (PARTITION BY o.owner
                                                              ORDER BY fit.claimable_at) AS rank
                      FROM ${fit} fit JOIN ${share.owners} o ON o.grp = fit.grp) mine
              LEFT JOIN (${share.held}) h ON h.owner = mine.owner
             WHERE mine.rank <= $${String(g - 1)}::int - coalesce(h.in_flight, 0))`;
}

/** The group cap's parameters (from `$g` in dueSubquery), after filterSql's. */
export function groupValues(filter: ClaimFilter | undefined): unknown[] {
  const group = filter?.group;
  if (!group) return [];
  return [[...group.busy.keys()], [...group.busy.values()], group.cap];
}
