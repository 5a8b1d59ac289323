import { readFileSync } from 'node:fs';
import type { LoadSummary } from '../load/load-summary.js';

/** What a driver summary (tools/load/load-summary.ts) says about the run's client side. */
export interface LoadCounts {
  /**
   * The scenario's counters of broken invariants and retries (storm_*, refund_*,
   * unresolved_requests, ...), the non-zero tagged parts ("storm_unexpected_status{status:400}")
   * and, for the mix, dropped_iterations.
   */
  counters: Record<string, number>;
  /** Failed checks by name (mix). */
  failedChecks: Record<string, number>;
  requests: number;
  iterations: { done: number; interrupted: number; errors: number };
  /** p99 latency (ms) by request name over the whole run. */
  p99Ms: Record<string, number>;
  /** Stopped by chaos's SIGINT; false: it ended on its own (out of time) before the timeline. */
  stopped: boolean;
  seconds: number;
}

/** One scenario of the chaos run's load: the driver's exit code and its summary. */
export interface LoadResult {
  scenario: string;
  exitCode: number | null;
  summary: LoadCounts | null;
}

/**
 * The counts of a driver summary, or null when there is none. `storm` runs far more iterations
 * than it has time for, so only the constant-rate `mix` reports dropped_iterations: arrivals
 * the driver had no free virtual user for.
 */
export function readLoadCounts(summaryPath: string, scenario: string): LoadCounts | null {
  let summary: LoadSummary;
  try {
    summary = JSON.parse(readFileSync(summaryPath, 'utf8')) as LoadSummary;
  } catch {
    return null;
  }
  const counters: Record<string, number> = { ...summary.counters };
  for (const [name, n] of Object.entries(summary.taggedCounters)) if (n > 0) counters[name] = n;
  if (scenario === 'mix') counters.dropped_iterations = summary.iterations.dropped;
  const failedChecks: Record<string, number> = {};
  for (const [name, check] of Object.entries(summary.checks)) failedChecks[name] = check.fails;
  return {
    counters,
    failedChecks,
    requests: summary.requests.total,
    iterations: {
      done: summary.iterations.done,
      interrupted: summary.iterations.interrupted,
      errors: summary.iterations.errors,
    },
    p99Ms: Object.fromEntries(Object.entries(summary.latencyMs).map(([name, t]) => [name, t.p99])),
    stopped: summary.interrupted,
    seconds: summary.seconds,
  };
}

/** Requests no client retry resolved, over every scenario. */
export function unresolvedRequests(results: readonly LoadResult[]): number {
  return results.reduce((n, run) => n + (run.summary?.counters.unresolved_requests ?? 0), 0);
}

/**
 * Client-side invariants --strict fails on: what no fault may break. (A refund storm's payment
 * that did not settle in time, or its amount_refunded read while a refund's answer was lost,
 * are outcomes of the faults; verify judges the money itself.)
 */
const STRICT_COUNTERS = [
  /^storm_(id_mismatch|body_mismatch|created_twice|unexpected_status|keys_without_payment)$/,
  /^refund_(sum_exceeded|accepted_too_many|id_mismatch|body_mismatch|created_twice)$/,
  /^capture_race_(two_winners|decided_twice|replay_mismatch|wrong_refusal|wrong_final)$/,
];

/**
 * Why the load fails the run: a scenario that did not run (the driver exits 0 when every
 * threshold held and 1 when one was crossed, expected under faults: both ran the load); with
 * --strict, a broken client invariant or a failed check.
 */
export function loadFailures(results: readonly LoadResult[], strict: boolean): string[] {
  const failures: string[] = [];
  for (const { scenario, exitCode, summary } of results) {
    if (exitCode !== 0 && exitCode !== 1)
      failures.push(`load ${scenario} did not run (exit ${exitCode ?? 'none'})`);
    if (!strict || !summary) continue;
    for (const [name, n] of Object.entries(summary.counters)) {
      if (n > 0 && STRICT_COUNTERS.some((pattern) => pattern.test(name))) {
        failures.push(`${scenario}: ${name} = ${n}`);
      }
    }
    for (const [name, n] of Object.entries(summary.failedChecks)) {
      if (n > 0) failures.push(`${scenario}: check "${name}" failed ${n} times`);
    }
  }
  return failures;
}

/** The report's load section. */
export function loadLines(results: readonly LoadResult[]): string[] {
  const out = [
    '',
    "Load (the project's driver; exit 1: thresholds crossed, expected under faults)",
  ];
  for (const { scenario, exitCode, summary } of results) {
    if (!summary) {
      out.push(`  ${scenario}: exit ${exitCode ?? 'none'}`, '    no summary');
      continue;
    }
    const { done, interrupted, errors } = summary.iterations;
    out.push(
      `  ${scenario}: exit ${exitCode ?? 'none'} (${summary.requests} requests; iterations ${done} done, ${interrupted} cut short, ${errors} threw)`,
    );
    if (!summary.stopped) {
      out.push(`    ended on its own after ${summary.seconds} s, before chaos stopped the load`);
    }
    const p99 = Object.entries(summary.p99Ms).map(([name, ms]) => `${name} ${Math.round(ms)}`);
    if (p99.length > 0) out.push(`    p99 (ms): ${p99.join(', ')}`);
    const counters = Object.entries(summary.counters).map(([name, n]) => `${name} ${n}`);
    if (counters.length > 0) out.push(`    ${counters.join(', ')}`);
    const failed = Object.entries(summary.failedChecks).filter(([, n]) => n > 0);
    out.push(
      `    failed checks: ${failed.length === 0 ? 'none' : failed.map(([name, n]) => `"${name}" ${n}`).join(', ')}`,
    );
  }
  return out;
}
