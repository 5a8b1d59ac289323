import type { LoadMetrics, TrendStats } from './load-metrics.js';
import type { ScenarioOutcome } from './run-scenario.js';
import type { ThresholdResult } from './thresholds.js';

/** The summary JSON a driver run writes (reports/<RUN_ID>/summary.json): what the run judged. */
export interface LoadSummary {
  scenario: string;
  runId: string;
  engine: 'node';
  startedAt: string;
  seconds: number;
  /** Stopped early (SIGINT): iterations in flight were not judged. */
  interrupted: boolean;
  /** MAX_DURATION (or the graceful stop) ran out before the iterations were done. */
  timedOut: boolean;
  /** Every threshold met and no iteration threw. */
  passed: boolean;
  thresholds: ThresholdResult[];
  counters: Record<string, number>;
  /** Counter parts by tag ("storm_unexpected_status{status:400}"). */
  taggedCounters: Record<string, number>;
  checks: Record<string, { passes: number; fails: number }>;
  requests: { total: number; perSecond: number };
  iterations: { done: number; interrupted: number; dropped: number; errors: number };
  latencyMs: Record<string, TrendStats>;
  /** The driver's own cost: CPU time (user + system) and peak resident memory. */
  driver: { cpuMs: number; cpuMsPerRequest: number; peakRssMb: number };
}

export function loadSummary(input: {
  scenario: string;
  runId: string;
  startedAt: Date;
  outcome: ScenarioOutcome;
  thresholds: ThresholdResult[];
  metrics: LoadMetrics;
  errors: number;
  cpu: NodeJS.CpuUsage;
}): LoadSummary {
  const { metrics, outcome } = input;
  const cpuMs = (input.cpu.user + input.cpu.system) / 1000;
  return {
    scenario: input.scenario,
    runId: input.runId,
    engine: 'node',
    startedAt: input.startedAt.toISOString(),
    seconds: round(outcome.seconds),
    interrupted: outcome.interrupted,
    timedOut: outcome.timedOut,
    passed: input.errors === 0 && input.thresholds.every((t) => t.ok),
    thresholds: input.thresholds,
    counters: Object.fromEntries(metrics.counters),
    taggedCounters: Object.fromEntries(metrics.taggedCounters),
    checks: Object.fromEntries(metrics.checks),
    requests: {
      total: metrics.requests,
      perSecond: round(metrics.requests / Math.max(outcome.seconds, 0.001)),
    },
    iterations: {
      done: metrics.iterations,
      interrupted: metrics.interruptedIterations,
      dropped: metrics.droppedIterations,
      errors: input.errors,
    },
    latencyMs: Object.fromEntries(
      Object.entries(metrics.trends()).map(([name, t]) => [
        name,
        {
          count: t.count,
          avg: round(t.avg),
          med: round(t.med),
          p95: round(t.p95),
          p99: round(t.p99),
          max: round(t.max),
        },
      ]),
    ),
    driver: {
      cpuMs: Math.round(cpuMs),
      cpuMsPerRequest: round(cpuMs / Math.max(metrics.requests, 1), 4),
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    },
  };
}

/** The summary as lines for a terminal. */
export function formatLoadSummary(summary: LoadSummary): string {
  const lines = [
    `load ${summary.scenario} (run ${summary.runId}): ${summary.passed ? 'PASSED' : 'FAILED'}` +
      `${summary.interrupted ? ' (interrupted)' : ''}${summary.timedOut ? ' (out of time)' : ''}`,
    `  ${summary.requests.total} requests in ${summary.seconds} s (${summary.requests.perSecond}/s); ` +
      `iterations ${summary.iterations.done} done, ${summary.iterations.interrupted} cut short, ` +
      `${summary.iterations.dropped} dropped, ${summary.iterations.errors} threw`,
  ];
  for (const [name, t] of Object.entries(summary.latencyMs)) {
    lines.push(
      `  ${name}: ${t.count} requests, avg ${t.avg} ms, med ${t.med}, p95 ${t.p95}, p99 ${t.p99}, max ${t.max}`,
    );
  }
  const counters = Object.entries(summary.counters).map(([name, n]) => `${name} ${n}`);
  if (counters.length > 0) lines.push(`  counters: ${counters.join(', ')}`);
  for (const [name, n] of Object.entries(summary.taggedCounters)) lines.push(`    ${name}: ${n}`);
  for (const [name, c] of Object.entries(summary.checks)) {
    lines.push(`  check "${name}": ${c.passes} passed, ${c.fails} failed`);
  }
  for (const t of summary.thresholds) {
    lines.push(
      `  ${t.ok ? 'ok    ' : 'BROKEN'} ${t.metric} ${t.rule} (${t.value === null ? 'no samples' : String(Math.round(t.value * 100) / 100)})`,
    );
  }
  lines.push(
    `  driver: ${summary.driver.cpuMs} ms CPU (${summary.driver.cpuMsPerRequest} ms per request), peak RSS ${summary.driver.peakRssMb} MB`,
  );
  return `${lines.join('\n')}\n`;
}

function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
