import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Config } from '../../src/platform/config/config.js';
import type { Logger } from '../../src/platform/telemetry/logger.js';
import { openBenchDatabase } from './bench-database.js';
import { peakRssMb, ROOT, serviceEntry, startProcess } from './bench-process.js';
import { stackSubject, startCpuWindow } from './cpu-usage.js';
import { closedLoop, type Shot } from './load.js';
import { percentile } from '../support/percentile.js';

/** One way of running the API process: node flags and environment. */
export interface ApiVariant {
  name: string;
  nodeArgs: readonly string[];
  env: Record<string, string>;
}

export interface InterleavedSettings {
  cycles: number;
  sliceSeconds: number;
  concurrency: number;
  logLevel: string;
}

/** One slice: the load on one variant's process for sliceSeconds. */
export interface Slice {
  cycle: number;
  variant: string;
  perSecond: number;
  accepted: number;
  p99Ms: number;
  /** Postgres and Redis CPU seconds during the slice (their work is this variant's). */
  backendCpuSeconds: number;
}

export interface VariantSummary {
  variant: string;
  perSecondMedian: number;
  p99MsMedian: number;
  apiCpuMsPerPayment: number;
  totalCpuMsPerPayment: number;
  /** 1 - variant/reference new payments/s in the same cycle, median over cycles (%). */
  throughputCostPct: number;
  /** The middle half of the per-cycle costs: how far one cycle can be trusted. */
  throughputCostIqrPct: [number, number];
  /** Extra API CPU per payment over the reference's API + Postgres + Redis CPU per payment (%). */
  cpuCostPct: number;
  peakRssMb: number;
}

export interface InterleavedResult {
  summary: VariantSummary[];
  slices: Slice[];
  unexpectedStatuses: Record<string, number>;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const round3 = (n: number) => Math.round(n * 1000) / 1000;
const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => {
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Accepted payments of a loop: 2xx (anything else is a fault of the run, reported). */
function accepted(statuses: Record<string, number>): number {
  return sum(
    Object.entries(statuses)
      .filter(([status]) => status.startsWith('2'))
      .map(([, count]) => count),
  );
}

/**
 * Runs one API process per variant side by side on one scratch database and gives them the
 * new-payment load in turn: `cycles` cycles of one `sliceSeconds` closed-loop slice per variant,
 * the order rotating every cycle, so the machine's drift (a neighbour, the tables growing) falls
 * on each variant alike. The first variant is the reference the costs are measured against
 * (DESIGN 80): throughput per cycle, median over cycles; and each process's CPU over the whole
 * run (background work included, whenever it ran) per payment it accepted.
 */
export async function runInterleaved(
  config: Config,
  logger: Logger,
  variants: readonly ApiVariant[],
  settings: InterleavedSettings,
  say: (line: string) => void,
): Promise<InterleavedResult> {
  const { cycles, sliceSeconds, concurrency } = settings;
  const bench = await openBenchDatabase(config, logger, 'bench_interleaved');
  const children: ChildProcess[] = [];
  const slices: Slice[] = [];
  const apiCpuSeconds: Record<string, number> = {};
  const peakRss: Record<string, number> = {};
  const unexpected: Record<string, number> = {};
  try {
    const body = JSON.stringify({ amount: 1000, currency: 'EUR' });
    const newPayment = (): Shot => ({
      method: 'POST',
      path: '/payments',
      headers: {
        authorization: `Bearer ${bench.merchant.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body,
    });
    const ports: Record<string, number> = {};
    const pids: Record<string, { pids: number[] }> = {};
    for (const variant of variants) {
      const api = await startProcess(
        serviceEntry('apps/api/main.js'),
        { ...bench.apiEnv(settings.logLevel, Math.max(concurrency, 4)), ...variant.env },
        '/healthz',
        variant.nodeArgs,
      );
      children.push(api.child);
      ports[variant.name] = api.port;
      pids[variant.name] = { pids: [api.child.pid ?? 0] };
    }
    say(`warm-up: 3 s per process, then ${cycles} cycles of ${sliceSeconds} s per variant`);
    for (const variant of variants) {
      await closedLoop(ports[variant.name] ?? 0, concurrency, 3, newPayment);
    }
    // The bench stack's own Postgres and Redis (scripts/stack.sh pid), not every postgres and
    // redis-server on the machine.
    const backendSubjects = {
      postgres: await stackSubject(ROOT, 'postgres', 'postgres'),
      redis: await stackSubject(ROOT, 'redis', 'redis-server'),
    };
    const apiWindow = await startCpuWindow(pids);
    for (let cycle = 0; cycle < cycles; cycle += 1) {
      for (let i = 0; i < variants.length; i += 1) {
        const { name } = variants[(cycle + i) % variants.length] as ApiVariant;
        const backend = await startCpuWindow(backendSubjects);
        const result = await closedLoop(ports[name] ?? 0, concurrency, sliceSeconds, newPayment);
        const used = await backend();
        for (const [status, count] of Object.entries(result.statuses)) {
          if (!status.startsWith('2')) unexpected[status] = (unexpected[status] ?? 0) + count;
        }
        slices.push({
          cycle,
          variant: name,
          perSecond: result.perSecond,
          accepted: accepted(result.statuses),
          p99Ms: result.latencyMs.p99,
          backendCpuSeconds: (used.postgres ?? 0) + (used.redis ?? 0),
        });
      }
      if ((cycle + 1) % 10 === 0) say(`cycle ${cycle + 1}/${cycles}`);
    }
    Object.assign(apiCpuSeconds, await apiWindow());
    for (const [
      name,
      {
        pids: [pid],
      },
    ] of Object.entries(pids)) {
      peakRss[name] = await peakRssMb(pid ?? 0).catch(() => 0);
    }
  } finally {
    await Promise.all(children.map(stop));
    await bench.close();
  }

  const reference = variants[0]?.name ?? '';
  const of = (name: string) => slices.filter((slice) => slice.variant === name);
  const perPaymentMs = (name: string) => {
    const payments = Math.max(1, sum(of(name).map((slice) => slice.accepted)));
    const api = ((apiCpuSeconds[name] ?? 0) * 1000) / payments;
    const backend = (sum(of(name).map((slice) => slice.backendCpuSeconds)) * 1000) / payments;
    return { api, total: api + backend };
  };
  const base = perPaymentMs(reference);
  const summary = variants.map(({ name }): VariantSummary => {
    const mine = of(name);
    const ratios = sorted(
      mine.map((slice) => {
        const ref = of(reference).find((r) => r.cycle === slice.cycle);
        return ref ? slice.perSecond / ref.perSecond : 1;
      }),
    );
    const cpu = perPaymentMs(name);
    return {
      variant: name,
      perSecondMedian: round1(percentile(sorted(mine.map((s) => s.perSecond)), 50)),
      p99MsMedian: round1(percentile(sorted(mine.map((s) => s.p99Ms)), 50)),
      apiCpuMsPerPayment: round3(cpu.api),
      totalCpuMsPerPayment: round3(cpu.total),
      throughputCostPct: round1((1 - percentile(ratios, 50)) * 100),
      throughputCostIqrPct: [
        round1((1 - percentile(ratios, 75)) * 100),
        round1((1 - percentile(ratios, 25)) * 100),
      ],
      cpuCostPct: round1(((cpu.api - base.api) / base.total) * 100),
      peakRssMb: peakRss[name] ?? 0,
    };
  });
  return { summary, slices, unexpectedStatuses: unexpected };
}
