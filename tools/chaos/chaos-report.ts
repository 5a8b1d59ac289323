import type { RequestSample } from '../load/http-transport.js';
import { latencyBound } from './fault-plan.js';
import { loadLines, type LoadResult } from './load-results.js';
import type { LogCounts } from './role-fleet.js';
import type { FaultWindow } from './fault-window.js';
import { formatOffset, type TimelineEvent } from './timeline.js';
import type { WindowStats } from './window-stats.js';

export interface ChaosReport {
  runId: string;
  settings: string;
  timeline: TimelineEvent[];
  requests: {
    total: number;
    byStatus: Record<string, number>;
    failuresByKind: Record<string, number>;
  };
  windows: WindowStats[];
  /** Each scenario of the load: the driver's exit code and counts. */
  load: LoadResult[];
  logs: { name: string; starts: number; counts: LogCounts }[];
  /** Lines of a phase's own section (the rolling restart's), printed after the windows. */
  notes?: string[];
  verify: { exitCode: number | null; output: string };
  /** Why the run failed; empty when it passed. */
  failures: string[];
}

const POST = 'POST /payments';

/** Request counts and per-window latency from the load's samples (times relative to startedAt). */
export function summarizeRequests(
  samples: readonly RequestSample[],
  startedAt: number,
  windows: readonly FaultWindow[],
  deadlineMs: number,
): Pick<ChaosReport, 'requests' | 'windows'> {
  const byStatus: Record<string, number> = {};
  const failuresByKind: Record<string, number> = {};
  for (const sample of samples) {
    byStatus[String(sample.status)] = (byStatus[String(sample.status)] ?? 0) + 1;
    const kind = failureKind(sample);
    if (kind !== null) failuresByKind[kind] = (failuresByKind[kind] ?? 0) + 1;
  }
  // A sample carries the request's end; a window holds every request in flight during it.
  const relative = samples.map((sample) => ({
    ...sample,
    startMs: sample.atMs - startedAt - sample.durationMs,
    atMs: sample.atMs - startedAt,
  }));
  const stats: WindowStats[] = [];
  const firstFault = windows[0];
  if (firstFault) {
    stats.push(windowStats('baseline (no fault)', relative, 0, firstFault.startMs, null));
  }
  for (const window of windows) {
    const bound = latencyBound(window.fault.action, deadlineMs);
    stats.push(windowStats(window.fault.label, relative, window.startMs, window.endMs, bound));
  }
  return { requests: { total: samples.length, byStatus, failuresByKind }, windows: stats };
}

function failureKind(sample: RequestSample): string | null {
  if (sample.status >= 500) return `${sample.status} ${sample.name}`;
  if (sample.status === 0) return `no answer (error ${sample.error || '?'}) ${sample.name}`;
  return null;
}

function windowStats(
  label: string,
  samples: readonly (RequestSample & { startMs: number })[],
  fromMs: number,
  toMs: number,
  bound: { p99Ms?: number; maxMs?: number } | null,
): WindowStats {
  const inWindow = samples.filter((sample) => sample.atMs >= fromMs && sample.startMs < toMs);
  const durations = inWindow
    .filter((sample) => sample.name === POST)
    .map((sample) => sample.durationMs)
    .sort((a, b) => a - b);
  const stats = {
    label,
    fromMs,
    toMs,
    posts: durations.length,
    failures: inWindow.filter((sample) => failureKind(sample) !== null).length,
    p50: percentile(durations, 0.5),
    p95: percentile(durations, 0.95),
    p99: percentile(durations, 0.99),
    max: durations[durations.length - 1] ?? 0,
  };
  if (bound === null) return { ...stats, bound: null, boundMet: null };
  const parts: string[] = [];
  let met = true;
  if (bound.p99Ms !== undefined) {
    parts.push(`p99 <= ${bound.p99Ms}`);
    met &&= stats.p99 <= bound.p99Ms;
  }
  if (bound.maxMs !== undefined) {
    parts.push(`max <= ${bound.maxMs}`);
    met &&= stats.max <= bound.maxMs;
  }
  return { ...stats, bound: parts.join(', '), boundMet: met };
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
}

export function formatChaosReport(report: ChaosReport): string {
  const out: string[] = [];
  out.push(`chaos run ${report.runId}`, report.settings, '', 'Timeline');
  for (const event of report.timeline) out.push(`  ${formatOffset(event.atMs)}  ${event.text}`);

  out.push('', `Requests: ${report.requests.total}`);
  const statuses = Object.entries(report.requests.byStatus).sort(([a], [b]) => a.localeCompare(b));
  out.push(`  by status: ${statuses.map(([status, n]) => `${status}: ${n}`).join(', ')}`);
  const kinds = Object.entries(report.requests.failuresByKind).sort(([, a], [, b]) => b - a);
  out.push(`  5xx and unanswered, by kind: ${kinds.length === 0 ? 'none' : ''}`);
  for (const [kind, n] of kinds) out.push(`    ${String(n).padStart(6)}  ${kind}`);

  out.push(
    '',
    'POST /payments latency (ms) of the requests in flight during each fault (until it was undone)',
    `  ${'window'.padEnd(38)} ${'from'.padStart(8)} ${'to'.padStart(8)} ${'posts'.padStart(6)} ${'5xx/0'.padStart(6)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'p99'.padStart(7)} ${'max'.padStart(7)}  issue bound`,
  );
  for (const w of report.windows) {
    const bound = w.bound === null ? '' : `${w.bound}: ${w.boundMet ? 'met' : 'MISSED'}`;
    out.push(
      `  ${w.label.padEnd(38)} ${(w.fromMs / 1000).toFixed(1).padStart(8)} ${(w.toMs / 1000).toFixed(1).padStart(8)} ${String(w.posts).padStart(6)} ${String(w.failures).padStart(6)} ${ms(w.p50)} ${ms(w.p95)} ${ms(w.p99)} ${ms(w.max)}  ${bound}`,
    );
  }

  out.push(...(report.notes ?? []));
  out.push(...loadLines(report.load));

  out.push('', 'Log lines at warn or above, per process (starts: times started)');
  for (const { name, starts, counts } of report.logs) {
    out.push(
      `  ${name.padEnd(14)} starts ${starts}  warn ${counts.warn}  error ${counts.error}  fatal ${counts.fatal}`,
    );
  }

  out.push('', `Verify (exit ${report.verify.exitCode ?? 'none'})`);
  for (const line of report.verify.output.trimEnd().split('\n')) out.push(`  ${line}`);
  out.push(
    '',
    report.failures.length === 0
      ? 'RESULT: PASS'
      : `RESULT: FAIL\n${report.failures.map((f) => `  - ${f}`).join('\n')}`,
  );
  return `${out.join('\n')}\n`;
}

function ms(value: number): string {
  return value.toFixed(0).padStart(7);
}
