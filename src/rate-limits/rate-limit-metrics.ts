import { Counter } from 'prom-client';
import { metricsRegistry } from '../platform/metrics.js';

/** Rate-limit decisions by scope, outcome and where they were counted (redis or memory). */
export const rateLimitDecisions = new Counter({
  name: 'rate_limit_decisions_total',
  help: 'Rate-limit decisions by scope (merchant, address, key-prefix), outcome and store',
  labelNames: ['scope', 'outcome', 'store'] as const,
  registers: [metricsRegistry],
});
