import { jobStateGauge } from '../platform/job-state-gauge.js';

/**
 * Refund jobs by state (`pending`: waiting for or between acquirer attempts; `dead`: retries
 * exhausted, dead-lettered, waiting for dlq:replay), read from the database at scrape time
 * (dashboard and the refund alerts, ops/).
 */
const refundJobs = jobStateGauge({
  table: 'refund_jobs',
  help: 'Refund jobs by state (pending, dead), read at scrape time',
  states: ['pending', 'dead'],
});

/** Makes the gauge read `db`; returns the function that removes it. */
export const registerRefundBacklogProbe = refundJobs.registerProbe;
