import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';

interface Sample {
  value: number;
  labels: Record<string, unknown>;
  /** Set on a histogram's samples: its buckets, `_sum` and `_count`. */
  metricName?: string;
}

/**
 * The current value of a counter or gauge in this process's registry (summed over label sets
 * matching `labels`), or of a histogram's `_count`. Counters are process-wide: compare deltas.
 */
export async function metricValue(
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = metricsRegistry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const samples = (await metric.get()).values as Sample[];
  return samples
    .filter((s) => s.metricName === undefined || s.metricName === `${name}_count`)
    .filter((s) => Object.entries(labels).every(([k, want]) => String(s.labels[k]) === want))
    .reduce((sum, s) => sum + s.value, 0);
}
