import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../bench/bench-process.js';
import { runInterleaved, type ApiVariant } from '../bench/interleaved.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { exitOnHelp } from '../support/exit-on-help.js';

/**
 * `npm run bench:node-flags`: the API process under different node flags (V8 heap sizes, say),
 * side by side in interleaved slices (tools/bench/interleaved.ts, DESIGN 80): new payments/s
 * and CPU per payment against the first set, and each process's peak RSS (issue 12's memory
 * target, DESIGN 25). Writes reports/bench-node-flags-<time>.{json,md}.
 */

const DEFAULT_SETS = 'none=;semi-space 4 MB=--max-semi-space-size=4;none again (A/A)=';

exitOnHelp(`usage: npm run bench:node-flags
The API under several sets of node flags, loaded in turn in interleaved slices: throughput, CPU
per payment and peak RSS of each; writes reports/bench-node-flags-<time>.{json,md}.
Environment: BENCH_NODE_FLAG_SETS ("name=flags;name=flags", the first is the reference; default
"${DEFAULT_SETS}"), BENCH_TRACING_CYCLES (30), BENCH_TRACING_SLICE_SECONDS (1.5),
BENCH_CONCURRENCY (16), BENCH_LOG_LEVEL (warn).`);

const SETS = process.env.BENCH_NODE_FLAG_SETS ?? DEFAULT_SETS;
const CYCLES = Number(process.env.BENCH_TRACING_CYCLES ?? 30);
const SLICE_SECONDS = Number(process.env.BENCH_TRACING_SLICE_SECONDS ?? 1.5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';

function variants(): ApiVariant[] {
  return SETS.split(';')
    .filter((set) => set.includes('='))
    .map((set) => {
      const at = set.indexOf('=');
      return {
        name: set.slice(0, at).trim(),
        nodeArgs: set
          .slice(at + 1)
          .split(' ')
          .filter((flag) => flag !== ''),
        env: {},
      };
    });
}

async function main(): Promise<void> {
  const started = new Date();
  const loadBefore = os.loadavg();
  const sets = variants();
  const result = await runInterleaved(
    loadConfig(),
    createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }),
    sets,
    { cycles: CYCLES, sliceSeconds: SLICE_SECONDS, concurrency: CONCURRENCY, logLevel: LOG_LEVEL },
    (line) => process.stderr.write(`[bench:node-flags] ${line}\n`),
  );
  const round1 = (n: number) => Math.round(n * 10) / 10;
  const table = [
    `${CYCLES} cycles x ${sets.length} flag sets, ${SLICE_SECONDS} s closed-loop slices at concurrency ${CONCURRENCY}, ` +
      `${os.cpus().length} cores, Node ${process.version}, load average ${loadBefore.map(round1).join(' / ')} before, ` +
      `${os.loadavg().map(round1).join(' / ')} after; non-2xx answers: ${JSON.stringify(result.unexpectedStatuses)}.`,
    '',
    '| flag set | node flags | new payments/s (median slice) | p99 ms | API CPU ms/payment | throughput cost, same cycle: median (middle half) | CPU cost | peak RSS |',
    '|---|---|---|---|---|---|---|---|',
    ...result.summary.map((s, i) => {
      const flags = sets[i]?.nodeArgs.join(' ') || 'none';
      const costs =
        i === 0
          ? 'reference | reference'
          : `${s.throughputCostPct}% (${s.throughputCostIqrPct[0]}% to ${s.throughputCostIqrPct[1]}%) | ${s.cpuCostPct}%`;
      return `| ${s.variant} | ${flags} | ${s.perSecondMedian} | ${s.p99MsMedian} | ${s.apiCpuMsPerPayment} | ${costs} | ${s.peakRssMb} MB |`;
    }),
  ].join('\n');
  process.stdout.write(`${table}\n`);
  await mkdir(path.join(ROOT, 'reports'), { recursive: true });
  const stamp = started.toISOString().replaceAll(':', '-').slice(0, 19);
  const base = path.join(ROOT, 'reports', `bench-node-flags-${stamp}`);
  await writeFile(`${base}.json`, JSON.stringify({ date: started, sets, ...result }, null, 2));
  await writeFile(`${base}.md`, `# Node flags benchmark ${started.toISOString()}\n\n${table}\n`);
}

await main();
