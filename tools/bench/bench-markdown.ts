import { ACCEPTED_FRACTION, FLAT_FRACTION } from './backlog.js';
import { backlogWindowSeconds, type PipelineResult } from './measure-pipeline.js';
import { WINDOW_SECONDS } from './settle-latency.js';
import type { PartRecord, Row } from './part-reports.js';
import { pipelineCpuTable } from './pipeline-cpu.js';
import { ms } from './report-format.js';
import { markdownTable, partsTable, sweepTable } from './report-tables.js';

export interface BenchMarkdownInput {
  started: Date;
  machine: { cores: number; cpu: string; memoryGiB: number; node: string };
  busiestBefore: string[];
  parts: readonly PartRecord[];
  targets: readonly Row[];
  earlier: readonly Row[];
  runs: readonly PipelineResult[];
  settleSeconds: number;
  sweepSeconds: number;
  /** The report's file name without extension (the chart sits next to it). */
  baseName: string;
  /** Steps shorter than the minute the keep-up verdict asks: say the verdicts are indicative. */
  short: boolean;
}

function runDetails(run: PipelineResult, index: number, cores: number): string[] {
  const stages = Object.entries(run.settle.stages)
    .map(([name, stage]) => `${name} ${ms(stage.p50)} / ${ms(stage.p99)}`)
    .join(', ');
  const windows = run.settle.windows
    .map((w) => `${w.fromSecond}-${w.fromSecond + WINDOW_SECONDS} s ${ms(w.p99)} (${w.payments})`)
    .join(', ');
  const cpu = Object.entries(run.cpuSeconds)
    .map(([part, seconds]) => `${part} ${seconds} s`)
    .join(', ');
  return [
    `Run ${index + 1} at ${run.settleRate}/s: accepted-to-settled by stage (p50 / p99) ${stages}; ` +
      `p99 by ${WINDOW_SECONDS}-second window of acceptance (payments) ${windows}; CPU seconds ` +
      `over its ${run.wallSeconds} s (first request until every payment was terminal; ` +
      `${Math.round(run.wallSeconds * cores)} CPU-seconds available) ${cpu}.`,
    '',
  ];
}

/** The report's markdown: the targets, the other figures, the parts, the pipeline's steps. */
export function benchMarkdown(input: BenchMarkdownInput): string {
  const { machine, parts, runs } = input;
  const first = parts[0];
  const last = parts.at(-1);
  const met = input.targets.filter((row) => row.pass === true).length;
  return [
    `# Benchmark report ${input.started.toISOString()}`,
    '',
    `${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB, Node ${machine.node}; ` +
      'Postgres, Redis, Kafka, the service and the load generators all on this machine. ' +
      `Load average at the start ${first?.loadAverageStart.join(' / ') ?? '-'}, at the end ` +
      `${last?.loadAverageEnd.join(' / ') ?? '-'} (1/5/15 min): figures from a busy machine ` +
      "are not the machine's.",
    '',
    `## Issue 29's targets: ${met} of ${input.targets.length} met`,
    '',
    markdownTable(input.targets),
    '',
    `### Where the pipeline's CPU goes (ms per settled payment, fixed-rate runs at ${runs[0]?.settleRate ?? '-'}/s)`,
    '',
    runs.length ? pipelineCpuTable(runs) : 'No pipeline run was measured.',
    '',
    "Whole-pipeline CPU: each process's user + system time over the fixed-rate runs (from the " +
      'first request until every payment was terminal), Postgres, Kafka and Redis as the bench ' +
      "stack's process trees, divided by the payments settled; the acquirer simulator and the load " +
      'generator are shown apart and not summed.',
    '',
    '## Figures of earlier issues (their targets)',
    '',
    markdownTable(input.earlier),
    '',
    '## Parts of the run',
    '',
    partsTable(parts),
    '',
    `## Latency versus rate (${input.sweepSeconds} s per sweep step, ${input.settleSeconds} s per fixed-rate run)`,
    '',
    `![latency versus rate](${input.baseName}.svg)`,
    '',
    sweepTable(runs),
    '',
    'Backlog: payments accepted and not yet settled, read every second; its least-squares slope ' +
      `over the last ${backlogWindowSeconds(input.sweepSeconds)} s of a sweep step ` +
      `(${backlogWindowSeconds(input.settleSeconds)} s of a fixed-rate run) is "growing" when it ` +
      `exceeds ${FLAT_FRACTION * 100}% of the offered rate, "flat" otherwise. A step holds its ` +
      `rate only if the API accepted at least ${ACCEPTED_FRACTION * 100}% of it: a backlog stays ` +
      'flat behind an API that fell behind. Each fixed-rate run is a pipeline of its own (fresh ' +
      'processes, database and topics, its own warm-up).' +
      (input.short
        ? ' Short steps: shorter than the minute the keep-up target asks; the verdicts are indicative only.'
        : ''),
    '',
    ...runs.flatMap((run, i) => runDetails(run, i, machine.cores)),
    '## Busiest other processes when the run started (ps: lifetime %CPU, RSS, command)',
    '',
    ...input.busiestBefore.map((line) => `    ${line}`),
    '',
  ].join('\n');
}
