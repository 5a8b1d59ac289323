import { Gauge } from 'prom-client';
import { metricsRegistry } from '../telemetry/metrics.js';
import { checkReadiness, type DependencyCheck } from './readiness.js';

/** A scrape must not hang on a dead dependency: each check answers within this bound. */
const SCRAPE_CHECK_TIMEOUT_MS = 1_000;

let probedChecks: readonly DependencyCheck[] = [];

/**
 * 1 when the dependency answered its readiness check at scrape time, 0 when not (dashboard
 * and alerts, ops/). Every process exports it for the dependencies it uses.
 */
export const dependencyUp = new Gauge({
  name: 'dependency_up',
  help: 'Whether the dependency answered its readiness check at scrape time (1) or not (0)',
  labelNames: ['dependency'] as const,
  registers: [metricsRegistry],
  async collect() {
    if (probedChecks.length === 0) return;
    const report = await checkReadiness(probedChecks, SCRAPE_CHECK_TIMEOUT_MS);
    for (const result of report.checks) {
      this.set({ dependency: result.name }, result.status === 'up' ? 1 : 0);
    }
  },
});

/**
 * Makes the gauge run `checks` at each scrape; returns the function that removes them. With
 * several platforms in one process (tests) the last one registered is probed.
 */
export function registerReadinessProbe(checks: readonly DependencyCheck[]): () => void {
  probedChecks = checks;
  return () => {
    if (probedChecks === checks) probedChecks = [];
  };
}
