import type { BacklogTrend } from './backlog.js';
import type { PipelineResult } from './measure-pipeline.js';
import type { PartRecord, Row } from './part-reports.js';
import { pipelineSteps } from './pipeline-steps.js';
import { ms, perSecond } from './report-format.js';

/** MET / NOT MET / n/a. */
export function verdict(pass: boolean | null): string {
  return pass === null ? 'n/a' : pass ? 'MET' : 'NOT MET';
}

/** A markdown table of rows, with the verdict in the last column. */
export function markdownTable(table: readonly Row[], first = 'measure'): string {
  return [
    `| ${first} | value | reference (same run) | ratio | target | result |`,
    '|---|---|---|---|---|---|',
    ...table.map(
      (r) =>
        `| ${r.measure} | ${r.value} | ${r.reference} | ${r.ratio} | ${r.target} | ${verdict(r.pass)} |`,
    ),
  ].join('\n');
}

export function backlogCell(trend: BacklogTrend): string {
  if (trend.verdict === 'no data') return 'no data';
  return `${trend.verdict}: ${trend.first} -> ${trend.last} over ${trend.windowSeconds} s (${trend.slopePerSecond}/s)`;
}

/** Every fixed-rate run and sweep step: the API's figures, settlement's and the backlog's. */
export function sweepTable(runs: readonly PipelineResult[]): string {
  return [
    '| step | offered rate | achieved | API p50 | API p99 | non-202 | settled p50 | settled p99 | unsettled after drain wait | backlog over the last seconds of the step (first -> last, slope) |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...pipelineSteps(runs).map(({ label, step }) => {
      const non202 = Object.entries(step.api.statuses)
        .filter(([status]) => status !== '202')
        .reduce((sum, [, count]) => sum + count, 0);
      return `| ${label} | ${step.rate}/s | ${perSecond(step.api.perSecond)} | ${ms(step.api.latencyMs.p50)} | ${ms(step.api.latencyMs.p99)} | ${non202} | ${ms(step.settle.p50)} | ${ms(step.settle.p99)} | ${step.settle.unsettled} | ${backlogCell(step.backlog)} |`;
    }),
  ].join('\n');
}

/** Each part's wall time and the load average (1 min) around it. */
export function partsTable(parts: readonly PartRecord[]): string {
  const minutes = (seconds: number) =>
    `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  const total = parts.reduce((sum, part) => sum + part.wallSeconds, 0);
  return [
    '| part | started (UTC) | wall time | load average at start (1/5/15 min) | at end |',
    '|---|---|---|---|---|',
    ...parts.map(
      (p) =>
        `| ${p.part}${p.error ? ` (failed: ${p.error.replaceAll('|', '/').slice(0, 120)})` : ''} | ${p.startedAt.slice(11, 19)} | ${minutes(p.wallSeconds)} | ${p.loadAverageStart.join(' / ')} | ${p.loadAverageEnd.join(' / ')} |`,
    ),
    `| all parts | | ${minutes(total)} | | |`,
  ].join('\n');
}
