import { jobStateGauge } from '../platform/job-state-gauge.js';

/**
 * Settlement jobs by state (`pending`: accepted, waiting for or between acquirer attempts;
 * `dead`: retries exhausted, waiting for dlq:replay), read from the database at scrape time
 * (dashboard and the settlement backlog alert, ops/).
 */
const settlementJobs = jobStateGauge({
  table: 'settlement_jobs',
  help: 'Settlement jobs by state (pending, dead), read at scrape time',
  states: ['pending', 'dead'],
});

/** Makes the gauge read `db`; returns the function that removes it. */
export const registerSettlementBacklogProbe = settlementJobs.registerProbe;
