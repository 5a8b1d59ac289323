import { percentile } from '../support/percentile.js';

/** Trend statistics of one request name, in milliseconds (k6's summaryTrendStats). */
export interface TrendStats {
  count: number;
  avg: number;
  med: number;
  p95: number;
  p99: number;
  max: number;
}

/**
 * What a run counted: the scenario's counters (each with its tagged parts), checks, request
 * durations by name, requests sent, iterations done and dropped. The driver's counterpart of
 * k6's metrics, under the same names, so one threshold string judges both.
 */
export class LoadMetrics {
  readonly counters = new Map<string, number>();
  /** Counter parts by tag set: "storm_unexpected_status{status:400}" -> n. */
  readonly taggedCounters = new Map<string, number>();
  readonly checks = new Map<string, { passes: number; fails: number }>();
  private readonly durations = new Map<string, number[]>();
  requests = 0;
  iterations = 0;
  interruptedIterations = 0;
  droppedIterations = 0;

  /** Declares a counter so that it shows (at 0) even when nothing adds to it. */
  declare(name: string): void {
    if (!this.counters.has(name)) this.counters.set(name, 0);
  }

  add(name: string, value = 1, tags?: Readonly<Record<string, string>>): void {
    if (!this.counters.has(name)) throw new Error(`counter ${name} is not declared`);
    this.counters.set(name, (this.counters.get(name) ?? 0) + value);
    if (tags && Object.keys(tags).length > 0) {
      const key = `${name}{${Object.entries(tags)
        .map(([tag, v]) => `${tag}:${v}`)
        .join(',')}}`;
      this.taggedCounters.set(key, (this.taggedCounters.get(key) ?? 0) + value);
    }
  }

  check(name: string, ok: boolean): void {
    const entry = this.checks.get(name) ?? { passes: 0, fails: 0 };
    if (ok) entry.passes++;
    else entry.fails++;
    this.checks.set(name, entry);
  }

  request(name: string, durationMs: number): void {
    this.requests++;
    const list = this.durations.get(name);
    if (list) list.push(durationMs);
    else this.durations.set(name, [durationMs]);
  }

  /** The value a threshold's metric and aggregation name, or undefined for an unknown metric. */
  value(metric: string, aggregation: string): number | undefined {
    const trend = /^http_req_duration\{name:(.*)\}$/.exec(metric);
    if (trend) {
      const stats = this.trend(trend[1] ?? '');
      if (!stats) return aggregation === 'count' ? 0 : undefined;
      const fields: Record<string, number> = {
        count: stats.count,
        avg: stats.avg,
        med: stats.med,
        'p(95)': stats.p95,
        'p(99)': stats.p99,
        max: stats.max,
      };
      const value = fields[aggregation];
      if (value === undefined) throw new Error(`${metric}: cannot compute ${aggregation}`);
      return value;
    }
    if (metric === 'checks' && aggregation === 'rate') {
      let passes = 0;
      let total = 0;
      for (const entry of this.checks.values()) {
        passes += entry.passes;
        total += entry.passes + entry.fails;
      }
      // k6 judges a rate of no samples as passing a rate==1 threshold only when there were none
      // to fail; the driver says the same: nothing checked, nothing failed.
      return total === 0 ? 1 : passes / total;
    }
    if (aggregation !== 'count') return undefined;
    if (metric === 'dropped_iterations') return this.droppedIterations;
    if (metric === 'http_reqs') return this.requests;
    if (metric === 'iterations') return this.iterations;
    return this.counters.get(metric);
  }

  trend(name: string): TrendStats | undefined {
    const list = this.durations.get(name);
    if (!list || list.length === 0) return undefined;
    const sorted = [...list].sort((a, b) => a - b);
    const sum = sorted.reduce((total, v) => total + v, 0);
    return {
      count: sorted.length,
      avg: sum / sorted.length,
      med: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      p99: percentile(sorted, 99),
      max: sorted[sorted.length - 1] ?? 0,
    };
  }

  trends(): Record<string, TrendStats> {
    const out: Record<string, TrendStats> = {};
    for (const name of [...this.durations.keys()].sort()) {
      const stats = this.trend(name);
      if (stats) out[name] = stats;
    }
    return out;
  }
}
