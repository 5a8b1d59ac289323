import http from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../bench/bench-process.js';
import { runInterleaved, type ApiVariant } from '../bench/interleaved.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { exitOnHelp } from '../support/exit-on-help.js';

/**
 * `npm run bench:tracing`: what tracing costs the new-payment path (issue 13). Four API
 * processes run side by side on one scratch database:
 * - `untraced`: no tracing preload (the reference: only the API's built-in no-op spans), and
 *   `untraced again (A/A)`, the same in another process: what it "costs" is the noise floor;
 * - `off`: the preload (`--import dist/platform/telemetry/register-tracing.js`) and no exporter, which
 *   is how `npm start` and `npm run up` deploy it;
 * - `sampled 10%`: the preload with OTLP/HTTP export to a sink in this process that answers
 *   200, and `parentbased_traceidratio` 0.1.
 * The load goes to one of them at a time in short slices (a closed loop), the order rotating
 * every cycle, so the machine's drift (a neighbour, the table growing) falls on each variant
 * alike; whole-run runs of a few seconds each moved by 20-30% between runs of one variant.
 * Two costs per variant against the untraced process:
 * - throughput: new payments/s of each slice against the untraced slice of the same cycle,
 *   median over cycles;
 * - CPU: each API process's CPU time over the whole run (background work such as span export
 *   included, whenever it ran) per payment it accepted; the extra over the untraced process,
 *   as a share of what an untraced payment costs the API, Postgres and Redis together (on a
 *   saturated machine, the throughput it gives up).
 * Writes reports/bench-tracing-<time>.{json,md}.
 */

exitOnHelp(`usage: npm run bench:tracing
What tracing costs new payments: the API without the tracing preload, with it and no exporter
(off), and with OTLP export and 10% sampling, in rotating slices (plus an A/A control); writes
reports/bench-tracing-<time>.{json,md}. No arguments.
Environment: BENCH_TRACING_CYCLES (40), BENCH_TRACING_SLICE_SECONDS (1.5), BENCH_CONCURRENCY (16),
BENCH_LOG_LEVEL (warn), BENCH_TRACING_NODE_ARGS (node flags for every variant's API).`);

const CYCLES = Number(process.env.BENCH_TRACING_CYCLES ?? 40);
const SLICE_SECONDS = Number(process.env.BENCH_TRACING_SLICE_SECONDS ?? 1.5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';
/** Node flags for every variant, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (where time goes). */
const EXTRA_NODE_ARGS = (process.env.BENCH_TRACING_NODE_ARGS ?? '').split(' ').filter(Boolean);
const PRELOAD = ['--import', path.join(ROOT, 'dist/platform/telemetry/register-tracing.js')];
/** Issue 13's targets: cost of new payments/s against the untraced API. */
const TARGET_PCT: Record<string, number> = { off: 2, 'sampled 10%': 10 };

const say = (line: string) => process.stderr.write(`[bench:tracing] ${line}\n`);

/** The variants; the sink's port is known only once it listens. */
function variants(sinkPort: number): ApiVariant[] {
  return [
    { name: 'untraced', nodeArgs: EXTRA_NODE_ARGS, env: {} },
    // The same as `untraced` in a process of its own: its "cost" is the method's resolution.
    { name: 'untraced again (A/A)', nodeArgs: EXTRA_NODE_ARGS, env: {} },
    { name: 'off', nodeArgs: [...PRELOAD, ...EXTRA_NODE_ARGS], env: {} },
    {
      name: 'sampled 10%',
      nodeArgs: [...PRELOAD, ...EXTRA_NODE_ARGS],
      env: {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${sinkPort}/v1/traces`,
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
      },
    },
  ];
}

/** An OTLP/HTTP endpoint that accepts everything; counts what reaches it. */
async function startSink(): Promise<{ port: number; received: () => number; close: () => void }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests += 1;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    received: () => requests,
    close: () => {
      server.close();
    },
  };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' });
  // The API reads OTEL_* itself: what this shell exports must not leak into a variant.
  for (const name of Object.keys(process.env)) {
    if (name.startsWith('OTEL_')) Reflect.deleteProperty(process.env, name);
  }
  const started = new Date();
  const loadBefore = os.loadavg();
  const sink = await startSink();
  const result = await runInterleaved(
    config,
    logger,
    variants(sink.port),
    { cycles: CYCLES, sliceSeconds: SLICE_SECONDS, concurrency: CONCURRENCY, logLevel: LOG_LEVEL },
    say,
  ).finally(() => {
    sink.close();
  });
  const unexpected = result.unexpectedStatuses;
  const summary = result.summary.map((s) => ({ ...s, targetPct: TARGET_PCT[s.variant] ?? null }));
  const report = {
    date: started.toISOString(),
    machine: { cores: os.cpus().length, node: process.version },
    loadAverageBefore: loadBefore.map(round1),
    loadAverageAfter: os.loadavg().map(round1),
    settings: {
      cycles: CYCLES,
      sliceSeconds: SLICE_SECONDS,
      concurrency: CONCURRENCY,
      apiLogLevel: LOG_LEVEL,
    },
    otlpExportRequests: sink.received(),
    unexpectedStatuses: unexpected,
    summary,
    slices: result.slices,
  };
  const verdict = (cost: number, target: number | null) =>
    target === null ? '-' : `< ${target}%: ${cost < target ? 'met' : 'NOT met'}`;
  const table = [
    `${CYCLES} cycles x ${summary.length} variants, ${SLICE_SECONDS} s closed-loop slices at concurrency ${CONCURRENCY}, ` +
      `${report.machine.cores} cores, Node ${process.version}, load average ${report.loadAverageBefore.join(' / ')} before, ` +
      `${report.loadAverageAfter.join(' / ')} after; ${report.otlpExportRequests} OTLP export requests reached the sink; ` +
      `non-2xx answers: ${JSON.stringify(unexpected)}.`,
    '',
    '| variant | new payments/s (median slice) | p99 ms (median slice) | API CPU ms/payment | API+Postgres+Redis CPU ms/payment | throughput cost vs untraced, same cycle: median (middle half) | CPU cost | target (on the CPU cost) |',
    '|---|---|---|---|---|---|---|---|',
    ...summary.map(
      (s) =>
        `| ${s.variant} | ${s.perSecondMedian} | ${s.p99MsMedian} | ${s.apiCpuMsPerPayment} | ${s.totalCpuMsPerPayment} | ` +
        (s.variant === 'untraced'
          ? 'reference | reference | - |'
          : `${s.throughputCostPct}% (${s.throughputCostIqrPct[0]}% to ${s.throughputCostIqrPct[1]}%) | ${s.cpuCostPct}% | ${verdict(Math.max(s.cpuCostPct, 0), s.targetPct)} |`),
    ),
    '',
    'Throughput cost: 1 - (variant / untraced) new payments/s per cycle, median over cycles. ' +
      "CPU cost: the variant's extra API CPU per payment (its whole-run CPU time, background export " +
      'included) over what one untraced payment costs the API, Postgres and Redis together.',
  ].join('\n');
  process.stdout.write(`${table}\n`);
  await mkdir(path.join(ROOT, 'reports'), { recursive: true });
  const stamp = report.date.replaceAll(':', '-').slice(0, 19);
  await writeFile(
    path.join(ROOT, 'reports', `bench-tracing-${stamp}.json`),
    JSON.stringify(report, null, 2),
  );
  await writeFile(
    path.join(ROOT, 'reports', `bench-tracing-${stamp}.md`),
    `# Tracing benchmark ${report.date}\n\n${table}\n`,
  );
}

await main();
