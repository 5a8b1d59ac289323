import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import type { Config } from '../../src/platform/config/config.js';
import { createKafka, ensureTopics } from '../../src/platform/kafka/kafka.js';
import type { Logger } from '../../src/platform/telemetry/logger.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import { closeRedis, createRedis, type Redis } from '../../src/platform/redis/redis.js';
import { roleDatabaseUrl, type ServiceRole } from '../support/role-database-url.js';
import { createScratchDatabase, dropScratchDatabaseOrReport } from '../support/scratch-database.js';
import { deleteKeysWithPrefix } from '../support/delete-keys-with-prefix.js';
import {
  apiNodeArgs,
  freePort,
  peakRssMb,
  ROOT,
  serviceEntry,
  startProcess,
} from './bench-process.js';
import { backlogTrend, sampleBacklog, type BacklogTrend } from './backlog.js';
import { stackSubject, startCpuWindow } from './cpu-usage.js';
import { constantRate, type RunResult, type Shot } from './load.js';

export interface SettleLatency {
  payments: number;
  /** Still pending or processing when the drain wait ended (0 when everything settled). */
  unsettled: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /**
   * Where the time went, p50 and p99 of each stage (ms): `relay` created -> on Kafka (the
   * payment.created outbox row's published_at), `consumer` on Kafka -> recorded as a job
   * (processed_events.processed_at), `worker` recorded -> settled (updated_at).
   */
  stages: Record<'relay' | 'consumer' | 'worker', { p50: number; p99: number }>;
  /**
   * The run cut into WINDOW_SECONDS windows by acceptance time: where the tail sits (a step
   * from idle to a rate the machine barely holds queues for seconds before it settles down).
   */
  windows: SettleWindow[];
}

export interface SettleWindow {
  /** Seconds from the run's start to the window's start. */
  fromSecond: number;
  payments: number;
  p99: number;
}

/** The width of a SettleLatency window. */
export const WINDOW_SECONDS = 10;

export interface SweepStep {
  rate: number;
  api: RunResult;
  settle: SettleLatency;
  /** The settlement backlog over the step's last backlogWindowSeconds. */
  backlog: BacklogTrend;
}

/** The window over which a step's backlog must be flat (issue 12: the last minute). */
export const BACKLOG_WINDOW_SECONDS = 60;

/**
 * The trend window of a step of `seconds`: the last minute, but never the first third of the
 * step, where the backlog climbs from zero to rate x latency even in a pipeline that keeps up.
 */
export function backlogWindowSeconds(seconds: number): number {
  return Math.min(BACKLOG_WINDOW_SECONDS, Math.round((seconds * 2) / 3));
}

export interface PipelineResult {
  settleRate: number;
  /** POST /payments at settleRate while relay and settlement run. */
  api: RunResult;
  /** Accepted (payment created_at) to settled (updated_at), by the database's timestamps. */
  settle: SettleLatency;
  /** The settlement backlog during the fixed-rate run. */
  backlog: BacklogTrend;
  sweep: SweepStep[];
  peakRssMb: { api: number; relay: number; settlement: number; acquirer: number };
  /** CPU seconds each part used during the fixed-rate run (2 cores give 2 s per second). */
  cpuSeconds: Record<string, number>;
  /** Wall-clock seconds of that run, until every payment was terminal. */
  wallSeconds: number;
  outbox: { rows: number; bytes: number };
}

export interface PipelineSettings {
  settleRate: number;
  settleSeconds: number;
  sweepRates: readonly number[];
  sweepSeconds: number;
  /** Seconds at settleRate before the measured run (then drained), so it meets warm processes. */
  warmUpSeconds: number;
  /** Longest wait for the pipeline to settle a step's payments before measuring them. */
  drainTimeoutMs: number;
  /** Called with each step as soon as it is measured (the report keeps it if a later one fails). */
  onStep?: (step: {
    label: 'fixed-rate' | 'sweep';
    rate: number;
    result: unknown;
  }) => Promise<void>;
}

/**
 * The whole product as three processes (api, relay, settlement: the production layout) on a
 * database and topics of its own, settlement calling the acquirer simulator as a fourth process
 * over HTTP (its CPU is the subject `acquirer`, apart from the service's; BENCH_ACQUIRER=in-process
 * runs the simulator inside settlement instead, for A/B runs of the hop), with the simulator at
 * zero latency and no random failures:
 * payments at a constant rate, then accepted-to-settled latency read from the database; then
 * the same at each rate of a sweep, for the latency-versus-rate chart. Everything it creates is
 * removed at the end.
 */
export async function measurePipeline(
  base: Config,
  settings: PipelineSettings,
  logger: Logger,
  say: (line: string) => void,
): Promise<PipelineResult> {
  const suffix = randomUUID().slice(0, 8);
  const database = `bench_pipeline_${suffix}`;
  const topics = { payments: `bench.pipeline.${suffix}`, dlq: `bench.pipeline.${suffix}.dlq` };
  const scratch = await createScratchDatabase(base.DATABASE_URL, database);
  const url = scratch.url;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const kafka = createKafka(base, logger);
  const kafkaAdmin = kafka.admin();
  const children: ChildProcess[] = [];
  const remoteAcquirer = process.env.BENCH_ACQUIRER !== 'in-process';
  try {
    await migrateUp(url, logger);
    // As deployed with the acquirer process: settlement's login has no grant on its books.
    if (remoteAcquirer) await pool.query('CALL acquirer_books_own_login()');
    await kafkaAdmin.connect();
    await ensureTopics(kafkaAdmin, [topics.payments, topics.dlq], base.KAFKA_TOPIC_PARTITIONS);
    await defineTier(pool, BENCH_TIER);
    const merchant = await createMerchant(pool, 'bench pipeline', BENCH_TIER.name);
    const env = {
      KAFKA_TOPIC_PAYMENTS: topics.payments,
      KAFKA_TOPIC_DLQ: topics.dlq,
      KAFKA_CONSUMER_GROUP: `bench-pipeline-${suffix}`,
      REDIS_KEY_PREFIX: `bench:${suffix}:`,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      ACQUIRER_SIM_LATENCY_MS: '0',
      ACQUIRER_SIM_FAILURE_RATE: '0',
    };
    // Each process as deployed: its role's own login on the scratch database the owner made.
    const as = (role: ServiceRole) => ({ ...env, DATABASE_URL: roleDatabaseUrl(url, role) });
    const api = await startProcess(
      serviceEntry('apps/api/main.js'),
      as('api'),
      '/healthz',
      apiNodeArgs(),
    );
    children.push(api.child);
    const relay = await startProcess(serviceEntry('apps/relay/main.js'), as('relay'), '/metrics');
    children.push(relay.child);
    // The acquirer as its own process on its own login (its internal listener on the port
    // startProcess gives it, its acquirer listener on another free port): not the service.
    // BENCH_ACQUIRER=in-process: the simulator inside settlement instead (A/B of the hop).
    const acquirerPort = await freePort();
    const acquirer = remoteAcquirer
      ? await startProcess(
          serviceEntry('apps/acquirer/main.js'),
          { ...as('acquirer'), ACQUIRER_PORT: String(acquirerPort) },
          '/readyz',
        )
      : undefined;
    if (acquirer) children.push(acquirer.child);
    const settlement = await startProcess(
      serviceEntry('apps/settlement/main.js'),
      acquirer
        ? { ...as('settlement'), ACQUIRER_URL: `http://127.0.0.1:${String(acquirerPort)}` }
        : as('settlement'),
      '/metrics',
    );
    children.push(settlement.child);

    const body = JSON.stringify({ amount: 1000, currency: 'EUR' });
    const newPayment = (): Shot => ({
      method: 'POST',
      path: '/payments',
      headers: {
        authorization: `Bearer ${merchant.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body,
    });
    /** Sends at `rate` for `seconds`, waits for settlement, measures that window's payments. */
    const step = async (rate: number, seconds: number) => {
      const from = new Date();
      const sampling = sampleBacklog(pool);
      const result = await constantRate(api.port, rate, seconds, newPayment);
      const samples = await sampling.stop();
      const to = new Date();
      const unsettled = await drain(pool, settings.drainTimeoutMs);
      return {
        api: result,
        settle: { ...(await settleLatency(pool, from, to)), unsettled },
        backlog: backlogTrend(samples, rate, backlogWindowSeconds(seconds)),
      };
    };

    // Warm-up at the measured rate: JIT, the connection pools grown, the consumer group joined.
    // Four seconds at half the rate left the processes cold: the first seconds of the measured
    // run then carried the tail (docs/benchmarks.md, "where the tail at 500/s comes from").
    say(`pipeline warm-up: ${settings.settleRate}/s for ${settings.warmUpSeconds} s, then drained`);
    await step(settings.settleRate, settings.warmUpSeconds);
    say(
      `pipeline: ${settings.settleRate} payments/s for ${settings.settleSeconds} s, api + relay + settlement`,
    );
    const cpu = await startCpuWindow({
      api: { pids: [api.child.pid ?? 0] },
      relay: { pids: [relay.child.pid ?? 0] },
      settlement: { pids: [settlement.child.pid ?? 0] },
      // Apart from the service: a real acquirer runs elsewhere (REPORT leaves it out of the total).
      acquirer: { pids: acquirer?.child.pid === undefined ? [] : [acquirer.child.pid] },
      postgres: await stackSubject(ROOT, 'postgres', 'postgres'),
      kafka: await stackSubject(ROOT, 'kafka', 'java'),
      redis: await stackSubject(ROOT, 'redis', 'redis-server'),
      'load generator': { pids: [process.pid] },
    });
    const started = performance.now();
    const main = await step(settings.settleRate, settings.settleSeconds);
    await settings.onStep?.({ label: 'fixed-rate', rate: settings.settleRate, result: main });
    const wallSeconds = Math.round((performance.now() - started) / 100) / 10;
    const cpuSeconds = await cpu();
    const sweep: SweepStep[] = [];
    for (const rate of settings.sweepRates) {
      say(`sweep: ${rate} payments/s for ${settings.sweepSeconds} s`);
      const measured = { rate, ...(await step(rate, settings.sweepSeconds)) };
      sweep.push(measured);
      await settings.onStep?.({ label: 'sweep', rate, result: measured });
    }
    const { rows } = await pool.query<{ rows: number; bytes: string }>(
      `SELECT count(*)::int AS rows, pg_total_relation_size('outbox')::text AS bytes FROM outbox`,
    );
    return {
      settleRate: settings.settleRate,
      api: main.api,
      settle: main.settle,
      backlog: main.backlog,
      sweep,
      peakRssMb: {
        api: await peakRssMb(api.child.pid ?? 0),
        relay: await peakRssMb(relay.child.pid ?? 0),
        settlement: await peakRssMb(settlement.child.pid ?? 0),
        acquirer: acquirer?.child.pid === undefined ? 0 : await peakRssMb(acquirer.child.pid),
      },
      outbox: { rows: rows[0]?.rows ?? 0, bytes: Number(rows[0]?.bytes ?? 0) },
      cpuSeconds,
      wallSeconds,
    };
  } finally {
    await Promise.all(children.map(stop));
    await pool.end();
    await kafkaAdmin.deleteTopics({ topics: [topics.payments, topics.dlq] }).catch(() => undefined);
    await kafkaAdmin.disconnect();
    await deleteKeys(base, logger, `bench:${suffix}:`);
    await dropScratchDatabaseOrReport(scratch, say);
  }
}

/** Removes the cached responses and locks a run left in Redis (they would live a day). */
export async function deleteKeys(config: Config, logger: Logger, prefix: string): Promise<void> {
  const redis: Redis = createRedis(config, logger);
  try {
    await redis.connect();
    await deleteKeysWithPrefix(redis, prefix);
  } finally {
    await closeRedis(redis);
  }
}

/** Waits until no payment is pending or processing; resolves with how many still are. */
async function drain(pool: pg.Pool, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM payments WHERE status IN ('pending', 'processing')`,
    );
    const left = rows[0]?.n ?? 0;
    if (left === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Accepted-to-settled percentiles (nearest rank, ms) of the payments created in [from, to]. */
async function settleLatency(
  pool: pg.Pool,
  from: Date,
  to: Date,
): Promise<Omit<SettleLatency, 'unsettled'>> {
  const { rows } = await pool.query<{ n: number; p: (number | null)[] | null; max: number | null }>(
    `SELECT count(*)::int AS n,
            percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY ms) AS p,
            max(ms) AS max
       FROM (SELECT extract(epoch FROM updated_at - created_at)::float8 * 1000 AS ms
               FROM payments WHERE status = 'settled' AND created_at BETWEEN $1 AND $2) t`,
    [from, to],
  );
  const row = rows[0];
  const round = (value: number | null | undefined) => Math.round((value ?? Number.NaN) * 10) / 10;
  // Fresh tables have no statistics yet; without them the planner nests loops over the join.
  await pool.query('ANALYZE payments, outbox, processed_events');
  const stage = await pool.query<{
    relay: number[] | null;
    consumer: number[] | null;
    worker: number[] | null;
  }>(
    `SELECT percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY relay) AS relay,
            percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY consumer) AS consumer,
            percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY worker) AS worker
       FROM (SELECT extract(epoch FROM o.published_at - p.created_at)::float8 * 1000 AS relay,
                    extract(epoch FROM e.processed_at - o.published_at)::float8 * 1000 AS consumer,
                    extract(epoch FROM p.updated_at - e.processed_at)::float8 * 1000 AS worker
               FROM payments p
               JOIN outbox o ON o.aggregate_id = p.id AND o.event_type = 'payment.created'
               JOIN processed_events e ON e.payment_id = p.id AND e.event_type = 'payment.created'
              WHERE p.status = 'settled' AND p.created_at BETWEEN $1 AND $2) t`,
    [from, to],
  );
  const windows = await pool.query<{ from_second: number; n: number; p99: number | null }>(
    `SELECT floor(extract(epoch FROM created_at - $1::timestamptz) / $3::int)::int * $3::int AS from_second,
            count(*)::int AS n,
            percentile_disc(0.99) WITHIN GROUP (
              ORDER BY extract(epoch FROM updated_at - created_at)::float8 * 1000) AS p99
       FROM payments WHERE status = 'settled' AND created_at BETWEEN $1 AND $2
      GROUP BY 1 ORDER BY 1`,
    [from, to, WINDOW_SECONDS],
  );
  const pair = (values: number[] | null | undefined) => ({
    p50: round(values?.[0]),
    p99: round(values?.[1]),
  });
  const stages = stage.rows[0];
  return {
    stages: {
      relay: pair(stages?.relay),
      consumer: pair(stages?.consumer),
      worker: pair(stages?.worker),
    },
    windows: windows.rows.map((w) => ({
      fromSecond: w.from_second,
      payments: w.n,
      p99: round(w.p99),
    })),
    payments: row?.n ?? 0,
    p50: round(row?.p?.[0]),
    p95: round(row?.p?.[1]),
    p99: round(row?.p?.[2]),
    max: round(row?.max),
  };
}

/** SIGTERM, then wait for the exit (bounded: SIGKILL after 20 s). */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
