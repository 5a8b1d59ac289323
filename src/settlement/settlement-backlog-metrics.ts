import { Gauge } from 'prom-client';
import type { Queryable } from '../platform/db.js';
import { metricsRegistry } from '../platform/metrics.js';

let probe: (() => Promise<{ state: string; jobs: number }[]>) | undefined;

/**
 * Settlement jobs by state (`pending`: accepted, waiting for or between acquirer attempts;
 * `dead`: retries exhausted, waiting for dlq:replay), read from the database at scrape time
 * (dashboard and the settlement backlog alert, ops/).
 */
export const settlementJobs = new Gauge({
  name: 'settlement_jobs',
  help: 'Settlement jobs by state (pending, dead), read at scrape time',
  labelNames: ['state'] as const,
  registers: [metricsRegistry],
  async collect() {
    if (!probe) return;
    // A scrape during a database outage keeps the last values rather than failing.
    const rows = await probe().catch(() => undefined);
    if (!rows) return;
    const counts = new Map([
      ['pending', 0],
      ['dead', 0],
    ]);
    for (const row of rows) counts.set(row.state, row.jobs);
    for (const [state, jobs] of counts) this.set({ state }, jobs);
  },
});

/** Makes the gauge read `db`; returns the function that removes it. */
export function registerSettlementBacklogProbe(db: Queryable): () => void {
  const read = async () => {
    const { rows } = await db.query<{ state: string; jobs: number }>(
      'SELECT state, count(*)::int AS jobs FROM settlement_jobs GROUP BY state',
    );
    return rows;
  };
  probe = read;
  return () => {
    if (probe === read) probe = undefined;
  };
}
