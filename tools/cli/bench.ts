import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ACCEPTED_FRACTION,
  FLAT_FRACTION,
  highestRateHolding,
  tookTheRate,
  type BacklogTrend,
  type StepVerdictInput,
} from '../bench/backlog.js';
import { ROOT, toolEntry } from '../bench/bench-process.js';
import { renderLatencyChart } from '../bench/latency-chart.js';
import type { RunResult } from '../bench/load.js';
import {
  webhooksConfiguredBenchRow,
  type WebhooksConfiguredResult,
} from '../bench/webhooks-configured.js';
import {
  backlogWindowSeconds,
  measurePipeline,
  type PipelineResult,
  type SweepStep,
  WINDOW_SECONDS,
} from '../bench/measure-pipeline.js';
import { loadConfig } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/logger.js';
import { runCli } from '../../src/cli/run-cli.js';
import { exitOnHelp } from '../support/exit-on-help.js';

/**
 * `npm run bench`: the benchmark report of BRIEF section 11. Starts the local stack, runs
 * `bench:api`, `bench:relay` and `bench:tracing` (as they are, as child processes, reading the JSON they leave),
 * then measures the whole pipeline as three processes (accepted-to-settled latency at 500
 * payments/s, and a latency-versus-rate sweep), and writes reports/bench-<time>.{md,json,svg}
 * (and .png when rsvg-convert is installed). Every figure stands next to its reference measured
 * in the same run, with the target and whether it was met. Targets are reported, never asserted.
 *
 * The pipeline part states whether it keeps up: the settlement backlog (payments accepted, not
 * yet settled) is read every second of each step and its trend over the step's last minute
 * (the last two thirds of a shorter step) is flat or growing; the report names the highest rate with a flat backlog and the highest with
 * accepted-to-settled p99 <= 250 ms.
 *
 * Settings (environment): BENCH_SETTLE_RATE (500), BENCH_SETTLE_SECONDS (90), BENCH_SWEEP_FRACTIONS
 * of bench:api's peak rate (0.2,0.4,0.5,0.6,0.75), BENCH_SWEEP_SECONDS (90), and those of
 * bench:api / bench:relay, which it passes on. `--quick`: 15 s steps and four rates (the backlog
 * verdict then covers 10 s, not a minute: indicative only).
 */

const USAGE = `usage: npm run bench [-- --quick] [-- --pipeline-only]
The benchmark report: starts the local stack, runs bench:api, bench:relay and bench:tracing,
then the whole pipeline as three processes; writes reports/bench-<time>.{md,json,svg}.
--quick: 15 s pipeline steps at four rates instead of 90 s at five, 12 tracing cycles instead
of 40, 12 webhooks-configured cycles instead of 30 (about 10 minutes less).
--pipeline-only: only the pipeline's fixed-rate run (warm-up, then BENCH_SETTLE_RATE for
BENCH_SETTLE_SECONDS; no bench:api, bench:relay, bench:tracing, no sweep): one summary line on
stderr, the figures as JSON on stdout and in reports/bench-pipeline-<time>.json. For A/B runs
of two builds (docs/benchmarks.md).
Environment: BENCH_SETTLE_RATE (500), BENCH_SETTLE_SECONDS (90; 15 quick), BENCH_SWEEP_FRACTIONS
(0.2,0.4,0.5,0.6,0.75; 0.2,0.4,0.6,0.75 quick), BENCH_SWEEP_SECONDS (90; 15 quick), and those
of bench:api, bench:relay and bench:tracing.`;
const FLAGS = exitOnHelp(USAGE, ['--quick', '--pipeline-only']);
const QUICK = FLAGS.has('--quick');
const PIPELINE_ONLY = FLAGS.has('--pipeline-only');

const run = promisify(execFile);
const SETTLE_RATE = Number(process.env.BENCH_SETTLE_RATE ?? 500);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? (QUICK ? 15 : 90));
const SWEEP_SECONDS = Number(process.env.BENCH_SWEEP_SECONDS ?? (QUICK ? 15 : 90));
const SWEEP_FRACTIONS = (
  process.env.BENCH_SWEEP_FRACTIONS ?? (QUICK ? '0.2,0.4,0.6,0.75' : '0.2,0.4,0.5,0.6,0.75')
)
  .split(',')
  .map(Number)
  .filter((fraction) => fraction > 0);
/** Issue 12: the pipeline must keep up at this fraction of bench:api's closed-loop peak. */
const KEEP_UP_FRACTION = 0.6;
const SETTLE_P99_TARGET_MS = 250;

const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);

/** The parts of bench:api's JSON report used here (tools/cli/bench-api.ts). */
interface ApiReport {
  settings: { concurrency: number; seconds: number };
  newPayments: RunResult;
  pgbenchSameStatement: RunResult;
  newPaymentsAtHalfPeak: RunResult & { rate: number };
  replays: RunResult;
  bareExpress: RunResult;
  apiPeakRssMb: number;
  /** Issue 27's A/B (null when BENCH_WEBHOOK_CYCLES=0; absent in reports before it). */
  webhooksConfigured?: WebhooksConfiguredResult | null;
}

/** bench:relay's JSON line (tools/cli/bench-relay.ts). */
interface RelayReport {
  lag: { events: number; achievedRate: number; p50: number; p95: number; p99: number };
  drain: { rows: number; perSecond: number };
  raw: { perSecond: number };
}

/** The parts of bench:tracing's JSON report used here (tools/cli/bench-tracing.ts). */
interface TracingReport {
  settings: { cycles: number; sliceSeconds: number };
  summary: {
    variant: string;
    throughputCostPct: number;
    throughputCostIqrPct: [number, number];
    cpuCostPct: number;
    apiCpuMsPerPayment: number;
  }[];
}

interface Row {
  measure: string;
  value: string;
  reference: string;
  ratio: string;
  target: string;
  pass: boolean | null;
}

/** Runs a compiled bench script; its table goes to our stderr, its stdout is returned. */
function runBench(entry: string, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [toolEntry(entry)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      process.stderr.write(chunk);
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${entry} exited with ${code}`));
    });
  });
}

/** What else is using the machine: the load average and the busiest other processes. */
async function machineConditions() {
  const { stdout } = await run('ps', [
    '-eo',
    'pid,ppid,pcpu,rss,args',
    '--sort=-pcpu',
    '--no-headers',
  ]);
  const mine = new Set([process.pid, process.ppid]);
  const others = stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([pid, ppid]) => pid && !mine.has(Number(pid)) && Number(ppid) !== process.pid);
  return {
    loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100),
    // %CPU over each process's lifetime, RSS, command line (cut short).
    busiest: others
      .slice(0, 5)
      .map(([, , cpu, rss, ...args]) => `${cpu}% ${rss} KiB ${args.join(' ').slice(0, 80)}`),
  };
}

const ms = (value: number) => `${Math.round(value * 10) / 10} ms`;
const perSecond = (value: number) => `${Math.round(value).toLocaleString('en')}/s`;
const percent = (part: number, whole: number) => Math.round((part / whole) * 1000) / 10;
const latencies = (r: { p50: number; p95: number; p99: number }) =>
  `p50 ${ms(r.p50)}, p95 ${ms(r.p95)}, p99 ${ms(r.p99)}`;

/** Issue 13: tracing off and 10% sampling against the untraced API, with the A/A control. */
function tracingRows(tracing: TracingReport): Row[] {
  const of = (variant: string) => tracing.summary.find((s) => s.variant === variant);
  const control = of('untraced again (A/A)');
  const untraced = of('untraced');
  const noise = control
    ? `A/A control (untraced vs untraced): throughput ${control.throughputCostPct}%, CPU ${control.cpuCostPct}%`
    : '-';
  return (
    [
      ['off', 'tracing off (preload, no exporter)', 2],
      ['sampled 10%', 'tracing on, OTLP export, 10% sampled', 10],
    ] as const
  ).map(([variant, measure, target]) => {
    const s = of(variant);
    return {
      measure: `${measure}: cost to new payments (${tracing.settings.cycles} interleaved cycles)`,
      value: s
        ? `throughput ${s.throughputCostPct}% (middle half ${s.throughputCostIqrPct[0]}% to ${s.throughputCostIqrPct[1]}%); CPU ${s.cpuCostPct}% (API ${s.apiCpuMsPerPayment} ms/payment)`
        : 'not measured',
      reference: `untraced API ${untraced?.apiCpuMsPerPayment ?? '-'} ms/payment; ${noise}`,
      ratio: '-',
      target: `< ${target}% (on the CPU cost)`,
      pass: s ? s.cpuCostPct < target : false,
    };
  });
}

function rows(api: ApiReport, relay: RelayReport, pipeline: PipelineResult): Row[] {
  const newVsPg = percent(api.newPayments.perSecond, api.pgbenchSameStatement.perSecond);
  const replayVsBare = percent(api.replays.perSecond, api.bareExpress.perSecond);
  const drainVsRaw = percent(relay.drain.perSecond, relay.raw.perSecond);
  const rss = Math.max(api.apiPeakRssMb, pipeline.peakRssMb.api);
  const { keepUp, settledWithin } = pipelineVerdicts(pipeline);
  return [
    {
      measure: `new payments, closed loop, concurrency ${api.settings.concurrency}`,
      value: `${perSecond(api.newPayments.perSecond)}; ${latencies(api.newPayments.latencyMs)}`,
      reference: `pgbench, same SQL, same concurrency: ${perSecond(api.pgbenchSameStatement.perSecond)}; ${latencies(api.pgbenchSameStatement.latencyMs)}`,
      ratio: `${newVsPg}%`,
      target: '>= 50% of pgbench',
      pass: newVsPg >= 50,
    },
    webhooksConfiguredBenchRow(api.webhooksConfigured),
    {
      measure: `new payments at half the peak (${api.newPaymentsAtHalfPeak.rate}/s, open loop)`,
      value: latencies(api.newPaymentsAtHalfPeak.latencyMs),
      reference: '-',
      ratio: '-',
      target: 'p99 <= 25 ms',
      pass: api.newPaymentsAtHalfPeak.latencyMs.p99 <= 25,
    },
    {
      measure: 'replays (Redis hit), closed loop',
      value: `${perSecond(api.replays.perSecond)}; ${latencies(api.replays.latencyMs)}`,
      reference: `bare Express JSON endpoint: ${perSecond(api.bareExpress.perSecond)}; ${latencies(api.bareExpress.latencyMs)}`,
      ratio: `${replayVsBare}%`,
      target: '>= 70% of bare Express',
      pass: replayVsBare >= 70,
    },
    {
      measure: `outbox commit-to-Kafka-ack lag at ${Math.round(relay.lag.achievedRate)} payments/s`,
      value: latencies(relay.lag),
      reference: '-',
      ratio: '-',
      target: 'p99 <= 50 ms at 500/s',
      pass: relay.lag.p99 <= 50,
    },
    {
      measure: `outbox backlog drain (${relay.drain.rows.toLocaleString('en')} rows)`,
      value: perSecond(relay.drain.perSecond),
      reference: `raw kafkajs sendBatch, same records: ${perSecond(relay.raw.perSecond)}`,
      ratio: `${drainVsRaw}%`,
      target: '>= 50% of sendBatch',
      pass: drainVsRaw >= 50,
    },
    {
      measure: `accepted-to-settled at ${pipeline.settleRate} payments/s, zero-latency acquirer (${pipeline.settle.payments} payments)`,
      value: `${latencies(pipeline.settle)}, max ${ms(pipeline.settle.max)}`,
      reference: `API at the same time: ${latencies(pipeline.api.latencyMs)}`,
      ratio: '-',
      target: 'p99 <= 250 ms at 500/s',
      pass: pipeline.settle.unsettled === 0 && pipeline.settle.p99 <= 250,
    },
    {
      measure:
        'pipeline keeps up: highest rate accepted in full with a flat settlement backlog (and all below)',
      value: keepUp === undefined ? 'none (slowest step already grows)' : perSecond(keepUp),
      reference: `bench:api closed-loop peak: ${perSecond(api.newPayments.perSecond)}`,
      ratio: keepUp === undefined ? '-' : `${percent(keepUp, api.newPayments.perSecond)}%`,
      target: `flat at >= ${KEEP_UP_FRACTION * 100}% of bench:api's peak`,
      pass: keepUp !== undefined && keepUp >= KEEP_UP_FRACTION * api.newPayments.perSecond,
    },
    {
      measure: `highest rate with accepted-to-settled p99 <= ${SETTLE_P99_TARGET_MS} ms (and all below)`,
      value: settledWithin === undefined ? 'none' : perSecond(settledWithin),
      reference: '-',
      ratio: '-',
      target: `>= ${SETTLE_RATE}/s`,
      pass: settledWithin !== undefined && settledWithin >= SETTLE_RATE,
    },
    {
      measure: 'API peak RSS (VmHWM)',
      value: `${rss} MB`,
      reference: `bench:api ${api.apiPeakRssMb} MB; pipeline: api ${pipeline.peakRssMb.api}, relay ${pipeline.peakRssMb.relay}, settlement ${pipeline.peakRssMb.settlement} MB`,
      ratio: '-',
      target: '<= 150 MB',
      pass: rss <= 150,
    },
    {
      measure: 'outbox table after the pipeline run',
      value: `${pipeline.outbox.rows.toLocaleString('en')} rows, ${Math.round(pipeline.outbox.bytes / 1024)} KiB`,
      reference: 'published rows are kept OUTBOX_RETENTION_SECONDS (1 h), then deleted',
      ratio: '-',
      target: 'bounded over a long run (not shown by a short one)',
      pass: null,
    },
  ];
}

/** The sweep's steps, then the fixed-rate run as one more step. */
function allSteps(pipeline: PipelineResult): SweepStep[] {
  const { settleRate: rate, api, settle, backlog } = pipeline;
  return [...pipeline.sweep, { rate, api, settle, backlog }];
}

/** Every pipeline step (the sweep and the fixed-rate run) as the verdicts read them. */
function pipelineSteps(pipeline: PipelineResult): StepVerdictInput[] {
  return allSteps(pipeline).map((step) => ({
    rate: step.rate,
    achieved: step.api.perSecond,
    settleP99: step.settle.p99,
    unsettled: step.settle.unsettled,
    backlog: step.backlog,
  }));
}

function pipelineVerdicts(pipeline: PipelineResult) {
  const steps = pipelineSteps(pipeline);
  return {
    keepUp: highestRateHolding(
      steps,
      (s) => tookTheRate(s) && s.backlog.verdict === 'flat' && s.unsettled === 0,
    ),
    settledWithin: highestRateHolding(
      steps,
      (s) => tookTheRate(s) && s.unsettled === 0 && s.settleP99 <= SETTLE_P99_TARGET_MS,
    ),
  };
}

function markdownTable(table: readonly Row[]): string {
  const verdict = (pass: boolean | null) => (pass === null ? 'n/a' : pass ? 'PASS' : 'FAIL');
  return [
    '| measure | value | reference (same run) | ratio | target | result |',
    '|---|---|---|---|---|---|',
    ...table.map(
      (r) =>
        `| ${r.measure} | ${r.value} | ${r.reference} | ${r.ratio} | ${r.target} | ${verdict(r.pass)} |`,
    ),
  ].join('\n');
}

function sweepTable(pipeline: PipelineResult): string {
  return [
    '| offered rate | achieved | API p50 | API p95 | API p99 | non-202 | settled p50 | settled p99 | unsettled after drain wait | backlog over the last seconds of the step (first -> last, slope) |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...allSteps(pipeline).map((step) => {
      const non202 = Object.entries(step.api.statuses)
        .filter(([status]) => status !== '202')
        .reduce((sum, [, count]) => sum + count, 0);
      return `| ${step.rate}/s | ${perSecond(step.api.perSecond)} | ${ms(step.api.latencyMs.p50)} | ${ms(step.api.latencyMs.p95)} | ${ms(step.api.latencyMs.p99)} | ${non202} | ${ms(step.settle.p50)} | ${ms(step.settle.p99)} | ${step.settle.unsettled} | ${backlogCell(step.backlog)} |`;
    }),
  ].join('\n');
}

function backlogCell(trend: BacklogTrend): string {
  if (trend.verdict === 'no data') return 'no data';
  return `${trend.verdict}: ${trend.first} -> ${trend.last} over ${trend.windowSeconds} s (${trend.slopePerSecond}/s)`;
}

function chart(api: ApiReport, pipeline: PipelineResult): string {
  // The sweep's steps and the fixed-rate run, in rate order.
  const steps = allSteps(pipeline);
  steps.sort((a, b) => a.rate - b.rate);
  const points = (pick: (step: SweepStep) => number) =>
    steps.map((step) => ({ x: step.rate, y: pick(step) }));
  return renderLatencyChart(
    [
      { name: 'POST /payments p50', color: '#1f77b4', points: points((s) => s.api.latencyMs.p50) },
      { name: 'POST /payments p99', color: '#ff7f0e', points: points((s) => s.api.latencyMs.p99) },
      { name: 'accepted-to-settled p99', color: '#2ca02c', points: points((s) => s.settle.p99) },
    ],
    {
      title: 'Latency versus offered rate (api + relay + settlement, one 2-core machine)',
      xLabel: 'offered rate, new payments per second (open loop)',
      yLabel: 'latency, ms (log scale)',
      targets: [
        { value: 25, label: 'API p99 target at half peak: 25 ms' },
        { value: 250, label: 'settled p99 target at 500/s: 250 ms' },
      ],
      rates: [
        { value: api.newPaymentsAtHalfPeak.rate, label: 'half of bench:api peak' },
        { value: pipeline.settleRate, label: `${pipeline.settleRate}/s` },
      ],
    },
  );
}

async function newestReport(prefix: string, since: Set<string>): Promise<string> {
  const dir = path.join(ROOT, 'reports');
  const fresh = (await readdir(dir)).filter(
    (file) => file.startsWith(prefix) && file.endsWith('.json') && !since.has(file),
  );
  const file = fresh.sort().at(-1);
  if (!file) throw new Error(`no new reports/${prefix}*.json was written`);
  return readFile(path.join(dir, file), 'utf8');
}

/**
 * `--pipeline-only`: the fixed-rate pipeline run alone, summed up per run for A/B comparisons of
 * two builds. Settled/s is what settled while the load ran: accepted minus the backlog left at
 * its end (the warm-up drained it before). CPU per settled payment is each process's CPU
 * seconds over the run (until everything settled) divided by the payments it settled.
 */
async function pipelineOnly(
  config: ReturnType<typeof loadConfig>,
  logger: ReturnType<typeof createLogger>,
  started: Date,
  before: Awaited<ReturnType<typeof machineConditions>>,
): Promise<void> {
  const pipeline = await measurePipeline(
    config,
    {
      settleRate: SETTLE_RATE,
      settleSeconds: SETTLE_SECONDS,
      warmUpSeconds: QUICK ? 5 : 20,
      sweepRates: [],
      sweepSeconds: 0,
      drainTimeoutMs: 120_000,
    },
    logger,
    say,
  );
  const accepted = pipeline.api.statuses['202'] ?? 0;
  const settledDuringLoad = accepted - pipeline.backlog.last;
  const cpuMsPerSettled = Object.fromEntries(
    Object.entries(pipeline.cpuSeconds).map(([part, seconds]) => [
      part,
      pipeline.settle.payments > 0
        ? Math.round((seconds * 1_000_000) / pipeline.settle.payments) / 1000
        : null,
    ]),
  );
  const summary = {
    date: started.toISOString(),
    loadAverageBefore: before.loadAverage,
    rate: SETTLE_RATE,
    seconds: SETTLE_SECONDS,
    achievedPerSecond: Math.round(pipeline.api.perSecond * 10) / 10,
    accepted,
    settledPerSecond: Math.round((settledDuringLoad / pipeline.api.seconds) * 10) / 10,
    settled: pipeline.settle.payments,
    unsettled: pipeline.settle.unsettled,
    settleP50Ms: pipeline.settle.p50,
    settleP99Ms: pipeline.settle.p99,
    backlog: pipeline.backlog,
    cpuMsPerSettled,
    cpuSeconds: pipeline.cpuSeconds,
    wallSeconds: pipeline.wallSeconds,
    stages: pipeline.settle.stages,
  };
  const stamp = started.toISOString().replaceAll(':', '-').slice(0, 19);
  const file = path.join(ROOT, 'reports', `bench-pipeline-${stamp}.json`);
  await writeFile(file, JSON.stringify({ summary, pipeline }, null, 2));
  say(
    `${SETTLE_RATE}/s: achieved ${summary.achievedPerSecond}/s, settled ${summary.settledPerSecond}/s, ` +
      `p50 ${ms(summary.settleP50Ms)}, p99 ${ms(summary.settleP99Ms)}, backlog ${backlogCell(summary.backlog)}, ` +
      `CPU ms/settled ${Object.entries(cpuMsPerSettled)
        .map(([part, value]) => `${part} ${value}`)
        .join(', ')}`,
  );
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.stdout.write(`report: ${path.relative(ROOT, file)}\n`);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ LOG_LEVEL: 'error', LOG_FORMAT: 'json' });
  const started = new Date();
  const before = await machineConditions();
  say(`load average ${before.loadAverage.join(' ')}; busiest: ${before.busiest.join(' | ')}`);

  say('stack: scripts/stack.sh start');
  await run('bash', [path.join(ROOT, 'scripts/stack.sh'), 'start'], { maxBuffer: 16 << 20 });
  await mkdir(path.join(ROOT, 'reports'), { recursive: true });
  if (PIPELINE_ONLY) return pipelineOnly(config, logger, started, before);
  const stamp = started.toISOString().replaceAll(':', '-').slice(0, 19);
  const base = path.join(ROOT, 'reports', `bench-${stamp}`);
  // Each part's figures are written as soon as they are measured (issue 29): a later part that
  // fails leaves the earlier ones in reports/bench-<time>.partial.json.
  const measured: Record<string, unknown> = { date: started.toISOString(), complete: false };
  const keep = async (part: string, figures: unknown) => {
    measured[part] = figures;
    await writeFile(`${base}.partial.json`, JSON.stringify(measured, null, 2));
  };

  say('bench:api (new payments vs pgbench, replays vs bare Express, RSS)');
  const existing = new Set(await readdir(path.join(ROOT, 'reports')));
  await runBench(
    'cli/bench-api.js',
    QUICK && !process.env.BENCH_WEBHOOK_CYCLES ? { BENCH_WEBHOOK_CYCLES: '12' } : {},
  );
  const api = JSON.parse(await newestReport('bench-api-', existing)) as ApiReport;
  await keep('api', api);

  say('bench:relay (outbox lag at 500/s, drain vs raw sendBatch)');
  const relayOut = await runBench('cli/bench-relay.js');
  const relay = JSON.parse(relayOut.trim().split('\n').at(-1) ?? '{}') as RelayReport;
  await keep('relay', relay);

  say('bench:tracing (tracing off and 10% sampled against the untraced API, interleaved)');
  await runBench('cli/bench-tracing.js', QUICK ? { BENCH_TRACING_CYCLES: '12' } : {});
  const tracing = JSON.parse(await newestReport('bench-tracing-', existing)) as TracingReport;
  await keep('tracing', tracing);

  const peak = api.newPayments.perSecond;
  const pipeline = await measurePipeline(
    config,
    {
      settleRate: SETTLE_RATE,
      settleSeconds: SETTLE_SECONDS,
      warmUpSeconds: QUICK ? 5 : 20,
      sweepRates: SWEEP_FRACTIONS.map((fraction) => Math.max(10, Math.round(peak * fraction))),
      sweepSeconds: SWEEP_SECONDS,
      drainTimeoutMs: 120_000,
      onStep: async ({ label, rate, result }) => {
        const steps = (measured.pipelineSteps as unknown[] | undefined) ?? [];
        await keep('pipelineSteps', [...steps, { label, rate, result }]);
      },
    },
    logger,
    say,
  );
  const after = await machineConditions();

  const table = [...rows(api, relay, pipeline), ...tracingRows(tracing)];
  const conditions = {
    cores: os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    loadAverageBefore: before.loadAverage,
    loadAverageAfter: after.loadAverage,
    busiestBefore: before.busiest,
  };
  const markdown = [
    `# Benchmark report ${started.toISOString()}`,
    '',
    `${conditions.cores} cores (${conditions.cpu}), ${conditions.memoryGiB} GiB, Node ${conditions.node}; ` +
      'Postgres, Redis, Kafka, the service and the load generators all on this machine. ' +
      `Load average before ${before.loadAverage.join(' / ')}, after ${after.loadAverage.join(' / ')} (1/5/15 min).`,
    '',
    markdownTable(table),
    '',
    `## Latency versus rate (api + relay + settlement as three processes, ${SWEEP_SECONDS} s per step)`,
    '',
    `![latency versus rate](${path.basename(base)}.svg)`,
    '',
    sweepTable(pipeline),
    '',
    `The last row is the fixed-rate run (${SETTLE_SECONDS} s). Backlog: payments accepted and ` +
      `not yet settled, read every second; its least-squares slope over the last ` +
      `${backlogWindowSeconds(SWEEP_SECONDS)} s of each step is "growing" when it exceeds ` +
      `${FLAT_FRACTION * 100}% of the offered rate (the pipeline settles less than it accepts), ` +
      `"flat" otherwise. A step holds its rate (the two verdicts above) only if the API accepted ` +
      `at least ${ACCEPTED_FRACTION * 100}% of it: a backlog stays flat behind an API that fell behind.` +
      (QUICK
        ? ' Quick mode: steps shorter than the minute the target asks; the verdicts are indicative.'
        : ''),
    '',
    `Accepted-to-settled at ${pipeline.settleRate}/s by stage (p50 / p99): ` +
      Object.entries(pipeline.settle.stages)
        .map(([name, stage]) => `${name} ${ms(stage.p50)} / ${ms(stage.p99)}`)
        .join(', ') +
      ' (relay: created to on Kafka; consumer: on Kafka to recorded as a settlement job; worker: job to settled).',
    '',
    `Accepted-to-settled p99 at ${pipeline.settleRate}/s by ${WINDOW_SECONDS}-second window of acceptance (payments): ` +
      pipeline.settle.windows
        .map(
          (w) => `${w.fromSecond}-${w.fromSecond + WINDOW_SECONDS} s ${ms(w.p99)} (${w.payments})`,
        )
        .join(', ') +
      '.',
    '',
    `CPU used during the ${pipeline.settleRate}/s run (${pipeline.wallSeconds} s from the first request until every payment was terminal; ${conditions.cores} cores = ${Math.round(pipeline.wallSeconds * conditions.cores)} CPU-seconds available): ` +
      Object.entries(pipeline.cpuSeconds)
        .map(([part, seconds]) => `${part} ${seconds} s`)
        .join(', ') +
      '.',
    '',
    'Rates are fractions of the closed-loop peak of bench:api (the API alone); here relay and ' +
      'settlement share the two cores, so the API saturates earlier.',
    '',
    '## Busiest other processes when the run started (ps: lifetime %CPU, RSS, command)',
    '',
    ...before.busiest.map((line) => `    ${line}`),
    '',
  ].join('\n');
  await writeFile(`${base}.md`, markdown);
  await writeFile(
    `${base}.json`,
    JSON.stringify(
      { date: started.toISOString(), conditions, table, api, relay, tracing, pipeline },
      null,
      2,
    ),
  );
  await writeFile(`${base}.svg`, chart(api, pipeline));
  await rm(`${base}.partial.json`, { force: true });
  const png = await run('rsvg-convert', ['-o', `${base}.png`, `${base}.svg`]).then(
    () => true,
    () => false,
  );

  process.stdout.write(`${markdownTable(table)}\n\n${sweepTable(pipeline)}\n\n`);
  for (const row of table.filter((r) => r.ratio !== '-'))
    process.stdout.write(`ratio: ${row.measure}: ${row.ratio} (target ${row.target})\n`);
  process.stdout.write(`report: ${path.relative(ROOT, base)}.{md,json,svg${png ? ',png' : ''}}\n`);
}

await runCli('bench', USAGE.trim(), main);
