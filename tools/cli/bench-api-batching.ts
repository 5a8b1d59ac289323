import { execFile, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { serviceEntry, startProcess } from '../bench/bench-process.js';
import { openBenchDatabase } from '../bench/bench-database.js';
import { startCpuWindow } from '../bench/cpu-usage.js';
import { closedLoop, type Shot } from '../bench/load.js';
import { paymentPgbenchDefines, paymentPgbenchScript } from '../bench/pgbench-script.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { databaseUrlWithName } from '../support/scratch-database.js';

/**
 * A/B of group commit (PAYMENT_BATCH_*): three API processes on one bench database, batching off
 * (PAYMENT_BATCH_MAX_ROWS=1), window-only (PAYMENT_BATCH_IN_FLIGHT=0) and on, in rotation; per run new payments/s,
 * CPU ms per payment of the API, Postgres (every process of the postmaster BENCH_PG_PID) and
 * Redis (BENCH_REDIS_PID), payments per transaction, and the load average. Plus pgbench on the
 * same one-payment statement: Postgres CPU per payment when every payment is a transaction.
 * Environment: BENCH_CONCURRENCY (16), BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_PG_PID,
 * BENCH_REDIS_PID, BENCH_BATCH_MAX_ROWS (64), BENCH_BATCH_WINDOW_MS (2), BENCH_BATCH_IN_FLIGHT (2), PGBENCH.
 */

const run = promisify(execFile);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PG_PID = Number(process.env.BENCH_PG_PID);
const REDIS_PID = Number(process.env.BENCH_REDIS_PID);
const PGBENCH = process.env.PGBENCH ?? '/usr/lib/postgresql/15/bin/pgbench';
const config = loadConfig();
const logger = createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' });
const say = (line: string) => process.stderr.write(`[ab] ${line}\n`);

/** Clock ticks of /proc/<pid>/stat fields (USER_HZ). */
const TICKS_PER_SECOND = 100;

/** Fields after the command name of /proc/<pid>/stat (index 0 is the state). */
async function statFields(pid: string | number): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * All CPU seconds Postgres has used: the postmaster's own and its reaped children's
 * (cutime/cstime, so backends that exited count, e.g. pgbench's) plus every live child's.
 */
async function postgresCpuSeconds(): Promise<number> {
  const own = await statFields(PG_PID);
  let ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(own[i]), 0);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statFields(entry);
    if (Number(fields[1]) === PG_PID) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}

const loadAverage = async () => (await readFile('/proc/loadavg', 'utf8')).split(' ')[0] ?? '';

interface Measured {
  arm: string;
  perSecond: number;
  payments: number;
  statuses: Record<string, number>;
  p50: number;
  p99: number;
  cpuMsPerPayment: Record<string, number>;
  paymentsPerTransaction: number;
  load1: string;
}

async function measure(
  arm: string,
  pool: { query: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }> },
  work: () => Promise<{
    perSecond: number;
    statuses: Record<string, number>;
    p50: number;
    p99: number;
  }>,
  subjects: Record<string, number[]>,
): Promise<Measured> {
  const since = new Date();
  const loadBefore = await loadAverage();
  const stop = await startCpuWindow(
    Object.fromEntries(Object.entries(subjects).map(([name, pids]) => [name, { pids }])),
  );
  const postgresBefore = await postgresCpuSeconds();
  const result = await work();
  const cpu = { ...(await stop()), postgres: (await postgresCpuSeconds()) - postgresBefore };
  const { rows } = await pool.query(
    `SELECT count(*)::int AS payments, count(DISTINCT xmin::text)::int AS transactions
       FROM payments WHERE created_at >= $1`,
    [since],
  );
  const { payments, transactions } = rows[0] as { payments: number; transactions: number };
  const perPayment = (seconds: number) => Math.round((seconds * 1e6) / payments) / 1000;
  const cpuMsPerPayment = Object.fromEntries(
    Object.entries(cpu).map(([name, seconds]) => [name, perPayment(seconds)]),
  );
  cpuMsPerPayment.total = perPayment(Object.values(cpu).reduce((a, b) => a + b, 0));
  return {
    arm,
    ...result,
    payments,
    cpuMsPerPayment,
    paymentsPerTransaction: Math.round((payments / Math.max(1, transactions)) * 10) / 10,
    load1: `${loadBefore} -> ${await loadAverage()}`,
  };
}

async function pgbench(database: string, merchantId: string, body: string) {
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbench-ab-'));
  const script = path.join(dir, 'payment.sql');
  await writeFile(script, paymentPgbenchScript());
  const url = new URL(databaseUrlWithName(config.DATABASE_URL, database));
  const { stdout } = await run(
    PGBENCH,
    [
      ...['-n', '-M', 'prepared', '-c', String(CONCURRENCY), '-j', '2', '-T', String(SECONDS)],
      ...paymentPgbenchDefines(merchantId, body),
      ...['-f', script, '-h', url.hostname, '-p', url.port || '5432'],
      ...['-U', decodeURIComponent(url.username), database],
    ],
    { env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) } },
  );
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1] ?? 0);
  return { perSecond: tps, statuses: {}, p50: 0, p99: 0 };
}

async function main(): Promise<void> {
  if (!Number.isInteger(PG_PID) || !Number.isInteger(REDIS_PID)) {
    throw new Error('BENCH_PG_PID and BENCH_REDIS_PID name the private stack processes');
  }
  const bench = await openBenchDatabase(config, logger, 'bench_batching');
  const children: ChildProcess[] = [];
  try {
    const apiEnv = bench.apiEnv('warn', Math.max(CONCURRENCY, 4));
    const start = async (maxRows: string, windowMs: string, inFlight = '2') => {
      const env = {
        ...apiEnv,
        PAYMENT_BATCH_MAX_ROWS: maxRows,
        PAYMENT_BATCH_WINDOW_MS: windowMs,
        PAYMENT_BATCH_IN_FLIGHT: inFlight,
      };
      const api = await startProcess(serviceEntry('apps/api/main.js'), env, '/healthz');
      children.push(api.child);
      return { port: api.port, pid: api.child.pid ?? 0 };
    };
    const maxRows = process.env.BENCH_BATCH_MAX_ROWS ?? '64';
    const windowMs = process.env.BENCH_BATCH_WINDOW_MS ?? '2';
    // off: one statement per payment; window: batches close on the window or max rows only (the
    // default); on: also sent at once while fewer than BENCH_BATCH_IN_FLIGHT are being written.
    const arms = {
      off: await start('1', '0'),
      window: await start(maxRows, windowMs, '0'),
      on: await start(maxRows, windowMs, process.env.BENCH_BATCH_IN_FLIGHT ?? '2'),
    };
    const names = Object.keys(arms) as (keyof typeof arms)[];
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
    const loop = async (port: number) => {
      const r = await closedLoop(port, CONCURRENCY, SECONDS, newPayment);
      return {
        perSecond: r.perSecond,
        statuses: r.statuses,
        p50: r.latencyMs.p50,
        p99: r.latencyMs.p99,
      };
    };
    for (const arm of Object.values(arms)) await closedLoop(arm.port, CONCURRENCY, 2, newPayment);

    const results: Measured[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Rotated, so no arm always runs first (the machine's load drifts).
      const order = names.map((_, i) => names[(i + round) % names.length] ?? 'off');
      for (const name of order) {
        const arm = arms[name];
        say(`round ${round + 1}: batching ${name}`);
        const subjects = { api: [arm.pid], redis: [REDIS_PID] };
        const measured = await measure(name, bench.pool, () => loop(arm.port), subjects);
        say(JSON.stringify(measured));
        results.push(measured);
      }
      say(`round ${round + 1}: pgbench, same one-payment statement`);
      const sample = await bench.pool.query<{ response_body: string }>(
        'SELECT response_body FROM idempotency_keys LIMIT 1',
      );
      const database = bench.name;
      try {
        const measured = await measure(
          'pgbench',
          bench.pool,
          () => pgbench(database, bench.merchant.id, sample.rows[0]?.response_body ?? '{}'),
          {},
        );
        say(JSON.stringify(measured));
        results.push(measured);
      } catch (error) {
        // E.g. no connection slot left beside the APIs' pools: the API figures are kept.
        say(`pgbench failed, round ${round + 1} has no reference: ${String(error).slice(0, 300)}`);
      }
    }
    process.stdout.write(
      `${JSON.stringify({ concurrency: CONCURRENCY, seconds: SECONDS, results }, null, 2)}\n`,
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await bench.close();
  }
}

await main();
