import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import type { Config } from '../../src/platform/config/config.js';
import { createKafka, ensureTopics } from '../../src/platform/kafka/kafka.js';
import type { Logger } from '../../src/platform/telemetry/logger.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import { roleDatabaseUrl, type ServiceRole } from '../support/role-database-url.js';
import { createScratchDatabase, dropScratchDatabaseOrReport } from '../support/scratch-database.js';
import { freePort } from '../support/free-port.js';
import {
  apiNodeArgs,
  peakRssMb,
  ROOT,
  serviceEntry,
  startProcess,
  stopProcess,
} from './bench-process.js';
import { backlogTrend, sampleBacklog, type BacklogTrend } from './backlog.js';
import { stackSubject, startCpuWindow } from './cpu-usage.js';
import { deleteKeys } from './delete-keys.js';
import { drainPayments } from './drain-payments.js';
import { constantRate, type RunResult, type Shot } from './load.js';
import { settleLatency, type SettleLatency } from './settle-latency.js';

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
      // The acquirer requires it, settlement sends it (DESIGN 121); the API ignores it.
      ACQUIRER_TOKEN: randomBytes(24).toString('base64url'),
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
      const unsettled = await drainPayments(pool, settings.drainTimeoutMs);
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
    await Promise.all(children.map(stopProcess));
    await pool.end();
    await kafkaAdmin.deleteTopics({ topics: [topics.payments, topics.dlq] }).catch(() => undefined);
    await kafkaAdmin.disconnect();
    await deleteKeys(base, logger, `bench:${suffix}:`);
    await dropScratchDatabaseOrReport(scratch, say);
  }
}
