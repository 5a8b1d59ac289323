import { Gauge } from 'prom-client';
import type { Queryable } from './db.js';
import { metricsRegistry } from './metrics.js';

/** A durable job table whose rows have a `state` (pending, dead). */
export type JobTable = 'settlement_jobs' | 'refund_jobs';

export interface JobStateGauge {
  gauge: Gauge<'state'>;
  /** Makes the gauge read `db` at scrape time; returns the function that removes it. */
  registerProbe: (db: Queryable) => () => void;
}

/**
 * A gauge of a job table's rows by state, read from the database at scrape time (one
 * `GROUP BY` per scrape), every state in `states` reported, 0 included. A scrape during a
 * database outage keeps the last values rather than failing.
 */
export function jobStateGauge(options: {
  table: JobTable;
  help: string;
  states: readonly string[];
}): JobStateGauge {
  let probe: (() => Promise<{ state: string; jobs: number }[]>) | undefined;
  const gauge = new Gauge({
    name: options.table,
    help: options.help,
    labelNames: ['state'] as const,
    registers: [metricsRegistry],
    async collect() {
      if (!probe) return;
      const rows = await probe().catch(() => undefined);
      if (!rows) return;
      const counts = new Map(options.states.map((state) => [state, 0]));
      for (const row of rows) counts.set(row.state, row.jobs);
      for (const [state, jobs] of counts) this.set({ state }, jobs);
    },
  });
  const registerProbe = (db: Queryable) => {
    const read = async () => {
      const { rows } = await db.query<{ state: string; jobs: number }>(
        `SELECT state, count(*)::int AS jobs FROM ${options.table} GROUP BY state`,
      );
      return rows;
    };
    probe = read;
    return () => {
      if (probe === read) probe = undefined;
    };
  };
  return { gauge, registerProbe };
}
