import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { relaySendBoundMs } from '../../src/outbox/relay-kafka.js';
import {
  CHAOS_USAGE,
  ChaosUsageError,
  parseChaosOptions,
  type ChaosOptions,
} from './chaos-options.js';
import { formatChaosReport, summarizeRequests, type ChaosReport } from './chaos-report.js';
import { planFaults, TAIL_SECONDS } from './fault-plan.js';
import {
  isRunning,
  loadResults,
  readLoadSamples,
  startChaosLoad,
  stopLoads,
  type RunningLoad,
} from './load-processes.js';
import { loadFailures, unresolvedRequests } from './load-results.js';
import { ENTRY_POINTS, repoRoot } from './repo-root.js';
import { RoleFleet, ROLES, type Role } from './role-fleet.js';
import { rollingRestartFailures, rollingRestartLines } from './rolling-restart.js';
import { runChecked, runCommand } from './run-command.js';
import type { FaultWindow } from './fault-window.js';
import { runFault, type FaultContext } from './run-fault.js';
import {
  createDatabase,
  deleteTopics,
  dropDatabase,
  runResources,
  type RunResources,
} from './run-resources.js';
import { StackControl, type StackService } from './stack-control.js';
import { roleDatabaseUrl } from '../support/role-database-url.js';
import { sleep, Timeline } from './timeline.js';
import {
  noteReceivers,
  startChaosReceivers,
  startFailures,
  webhookRoleEnv,
} from './webhook-receivers.js';
import { summarizeWebhooks, webhookFailures, webhookLines } from './webhook-summary.js';

/** Verify judges every payment once the pipeline drained; a few seconds absorb clock skew. */
const VERIFY_GRACE_SECONDS = 5;
/**
 * The run's relays bound each Kafka request at 2 s (default 10 s), so their lease can be 20 s
 * instead of the default minute: a lease must exceed the longest send (relaySendBoundMs, 15 s at
 * 2 s) or the relay refuses to start, and 5 s more leave a claim time to be sent on a busy
 * machine. The relay pause then outlasts the lease in 23 s, not 63 s, in a run CI waits for.
 */
const RELAY_KAFKA_REQUEST_TIMEOUT_MS = 2_000;
const RELAY_LEASE_MS = relaySendBoundMs(RELAY_KAFKA_REQUEST_TIMEOUT_MS) + 5_000;
const RELAY_PAUSE_SECONDS = Math.ceil(RELAY_LEASE_MS / 1000) + 3;
/**
 * Settlement's Kafka requests are bounded at 3 s in a run (default 10 s): its bounded
 * dead-letter send then fails about 12 s into a freeze instead of about 35 s, and the
 * dead-letter freeze, which holds until one did, stays short enough for CI. (Fetches are
 * bounded by their own wait, not by this.)
 */
const SETTLEMENT_KAFKA_REQUEST_TIMEOUT_MS = 3_000;

/**
 * `npm run chaos`: N processes of each role on the local stack under a duplicate storm and a
 * mixed load, with every role killed and every dependency frozen and stopped on a timeline;
 * then `verify` judges the run. See docs/chaos.md.
 */
async function main(): Promise<number> {
  const parsed = parseChaosOptions(process.argv.slice(2));
  if (parsed === 'help') {
    process.stdout.write(`${CHAOS_USAGE}\n`);
    return 0;
  }
  const options = parsed;
  const root = repoRoot();
  const entries = ['migrate', 'verify', 'load'] as const;
  for (const entry of [ENTRY_POINTS.role('api'), ...entries.map((name) => ENTRY_POINTS[name])]) {
    if (!existsSync(path.join(root, entry))) throw new Error(`${entry} missing: npm run build`);
  }
  const stack = new StackControl(root);
  const kafkaService: StackService = options.kafka3 ? 'kafka3' : 'kafka';
  await stack.checkRunning(['postgres', 'redis', kafkaService]);
  const endpoints = await stack.endpoints(options.kafka3);

  const runId = `chaos-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}-${randomBytes(2).toString('hex')}`;
  const runDir = path.join(root, 'reports', runId);
  mkdirSync(runDir, { recursive: true });
  const resources = runResources(runId, endpoints.DATABASE_URL);
  const fleet = new RoleFleet(root, runDir);
  // The owner on the run's database (created below; the pool connects on first use), for the
  // dead-letter freeze to watch jobs and dead letters.
  const db = new pg.Pool({
    connectionString: resources.databaseUrl,
    max: 2,
    connectionTimeoutMillis: 5_000,
    statement_timeout: 5_000,
  });
  // An idle connection dies when Postgres is stopped: the next query reconnects.
  db.on('error', () => undefined);
  const faultContext: FaultContext = {
    fleet,
    stack,
    timeline: new Timeline(),
    stopped: new Set(),
    kafka3: options.kafka3,
    relayLeaseMs: RELAY_LEASE_MS,
    // The API and key are filled in once they exist.
    probe: { db, apiUrl: '', apiKey: '', runId, refundMaxAttempts: refundMaxAttempts() },
    acquirerAdminUrl: '',
  };
  const loads: RunningLoad[] = [];
  const cleanup = installCleanup(stack, fleet, loads, faultContext);
  active.cleanup = cleanup.run;

  const say = (text: string) => process.stdout.write(`chaos: ${text}\n`);
  say(
    `run ${runId}: ${options.processes} x (${ROLES.join(', ')}), ${options.durationSeconds} s of load`,
  );
  say(
    `stack: ${endpoints.DATABASE_URL.replace(/\/\/[^@]*@/, '//')}, ${endpoints.REDIS_URL}, Kafka ${endpoints.KAFKA_BROKERS}`,
  );
  say(`logs, load samples and the report: ${path.relative(root, runDir)}/`);

  await createDatabase(endpoints.DATABASE_URL, resources.databaseName);
  // The owner's environment: migrations, the merchant CLIs and verify (an operator's tools).
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: resources.databaseUrl,
    // Migrations too go to the run's database, whatever `scripts/stack.sh env` exported.
    MIGRATION_DATABASE_URL: resources.databaseUrl,
    REDIS_URL: endpoints.REDIS_URL,
    KAFKA_BROKERS: endpoints.KAFKA_BROKERS,
    REDIS_KEY_PREFIX: resources.redisPrefix,
    KAFKA_TOPIC_PAYMENTS: resources.paymentsTopic,
    KAFKA_TOPIC_DLQ: resources.dlqTopic,
    KAFKA_CONSUMER_GROUP: resources.consumerGroup,
    HOST: '127.0.0.1',
    LOG_FORMAT: 'json',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  };
  // Each role process as deployed: its own login on the run's database (the owner created and
  // migrated it; the migrations grant the roles, PUBLIC may connect), no owner URL in sight.
  const roleLogins = { ...process.env, ...endpoints.roleLogins };
  const roleEnv = (role: Role): NodeJS.ProcessEnv => {
    const { MIGRATION_DATABASE_URL: _owner, ...rest } = env;
    return { ...rest, DATABASE_URL: roleDatabaseUrl(resources.databaseUrl, role, roleLogins) };
  };
  const node = (entry: string, args: string[], timeoutMs: number) =>
    runChecked(process.execPath, [path.join(root, entry), ...args], { cwd: root, env, timeoutMs });
  await node(ENTRY_POINTS.migrate, [], 120_000);
  // Chaos measures faults, not the rate limit: its merchants get a tier wide enough for the load.
  await node(
    ENTRY_POINTS.merchantTier,
    ['--define', 'chaos', '--rate', '1000000', '--burst', '10000000'],
    60_000,
  );
  const apiKeys: string[] = [];
  for (const n of [1, 2]) {
    const out = await node(
      ENTRY_POINTS.merchantCreate,
      ['--name', `${runId} merchant ${n}`, '--tier', 'chaos'],
      60_000,
    );
    apiKeys.push((JSON.parse(out) as { api_key: string }).api_key);
  }

  const apiUrls: string[] = [];
  // One acquirer process (the simulator, its books on its own login): settlement calls it.
  const [acquirerPort, acquirerAdminPort] = [await freePort(), await freePort()];
  faultContext.acquirerAdminUrl = `http://127.0.0.1:${String(acquirerAdminPort)}`;
  fleet.add('acquirer', 1, {
    ...roleEnv('acquirer'),
    ACQUIRER_PORT: String(acquirerPort),
    METRICS_PORT: String(acquirerAdminPort),
  });
  for (const role of ROLES) {
    for (let i = 1; i <= options.processes; i++) {
      const [port, metricsPort] = [await freePort(), await freePort()];
      if (role === 'api') apiUrls.push(`http://127.0.0.1:${port}`);
      fleet.add(role, i, {
        ...roleEnv(role),
        ...webhookRoleEnv(role),
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        ...(role === 'relay'
          ? {
              RELAY_LEASE_MS: String(RELAY_LEASE_MS),
              KAFKA_REQUEST_TIMEOUT_MS: String(RELAY_KAFKA_REQUEST_TIMEOUT_MS),
            }
          : {}),
        ...(role === 'settlement'
          ? {
              KAFKA_REQUEST_TIMEOUT_MS: String(SETTLEMENT_KAFKA_REQUEST_TIMEOUT_MS),
              ACQUIRER_URL: `http://127.0.0.1:${String(acquirerPort)}`,
              // The dead-letter fault needs tok_unavailable to exhaust within seconds: the
              // attempt guard and backoff of before issue 36, not its day-long window.
              SETTLEMENT_MAX_ATTEMPTS: process.env.SETTLEMENT_MAX_ATTEMPTS ?? '5',
              REFUND_MAX_ATTEMPTS: String(refundMaxAttempts()),
              SETTLEMENT_BACKOFF_CAP_MS: '30000',
              REFUND_BACKOFF_CAP_MS: '30000',
            }
          : {}),
      });
    }
  }
  // settlement-1 first: it creates the run's topics, which the others then find.
  await fleet.start('acquirer-1');
  await fleet.start('settlement-1');
  await Promise.all(
    fleet
      .names()
      .filter((name) => name !== 'settlement-1' && name !== 'acquirer-1')
      .map((name) => fleet.start(name)),
  );
  const logins = [...ROLES, 'acquirer' as const].map(
    (role) => new URL(roleDatabaseUrl(resources.databaseUrl, role, roleLogins)).username,
  );
  say(
    `${fleet.names().length} processes ready (logins ${logins.join(', ')}); APIs at ${apiUrls.join(' ')}`,
  );

  faultContext.probe.apiUrl = apiUrls[apiUrls.length - 1] ?? '';
  faultContext.probe.apiKey = apiKeys[0] ?? '';
  // An answering, a failing and a hanging webhook receiver, each with an endpoint per merchant.
  const receivers = await startChaosReceivers({ dir: runDir, apiUrl: apiUrls[0] ?? '', apiKeys });
  active.receivers = receivers;

  const conditionsAtStart = loadAverage(
    `conditions (${os.availableParallelism()} cores): load average at the start`,
  );
  const timeline = new Timeline();
  faultContext.timeline = timeline;
  noteReceivers(receivers, timeline);
  // The load runs until TAIL_SECONDS after the last fault was undone (stopped with SIGINT): a
  // slow restart then never leaves a later fault without load.
  loads.push(...startChaosLoad({ root, runDir, runId, apiKeys, apiUrls, options }));
  timeline.note(
    `load started: storm (${options.stormVus} VUs x ${options.copies} copies over ${apiUrls.length} APIs) and mix (${options.rate}/s with failure tokens)`,
  );

  const windows: FaultWindow[] = [];
  for (const fault of planFaults(options.durationSeconds, options.kafka3, RELAY_PAUSE_SECONDS)) {
    await sleep(fault.atSeconds * 1000 - timeline.now());
    if (fault.action.kind === 'kill-role' && fault.action.role === 'webhooks')
      startFailures(receivers, timeline);
    windows.push(await runFault(fault, faultContext));
  }
  timeline.note(`every fault undone; ${TAIL_SECONDS} s more load`);
  await sleep(TAIL_SECONDS * 1000);
  const loadCodes = await stopLoads(loads);
  timeline.note('load finished');

  timeline.note(`verify --wait ${options.verifyWaitSeconds} (the pipeline drains first)`);
  const verify = await runCommand(
    process.execPath,
    [
      path.join(root, ENTRY_POINTS.verify),
      '--wait',
      String(options.verifyWaitSeconds),
      '--grace',
      String(VERIFY_GRACE_SECONDS),
      '--webhook-receipts',
      receivers.set.files.join(','),
    ],
    { cwd: root, env, timeoutMs: (options.verifyWaitSeconds + 300) * 1000 },
  );
  timeline.note(`verify exited ${verify.code ?? 'by a signal'}`);
  const webhooks = await summarizeWebhooks(db, receivers);
  await receivers.set.close();
  await fleet.stopAll();
  await db.end();
  timeline.note('every process stopped');

  const samplesByScript = await readLoadSamples(loads);
  const samples = samplesByScript.flatMap((set) => set.samples);
  const report: ChaosReport = {
    runId,
    settings: `${describeSettings(options, apiUrls.length, endpoints.KAFKA_BROKERS)}\n${conditionsAtStart}, ${loadAverage('at the end')}`,
    timeline: timeline.events,
    ...summarizeRequests(samples, timeline.startedAt, windows, options.deadlineMs),
    load: loadResults(loads, loadCodes),
    logs: fleet.logCounts(),
    verify: { exitCode: verify.code, output: `${verify.stderr}${verify.stdout}` },
    failures: [],
  };
  const rolling = windows.find((window) => window.fault.action.kind === 'rolling-restart');
  report.notes = rollingRestartLines(
    faultContext.rolled ?? [],
    rolling,
    report.windows.find((window) => window.label === rolling?.fault.label),
    samplesByScript,
    timeline.startedAt,
    unresolvedRequests(report.load),
  );
  report.notes.push(...webhookLines(webhooks));
  report.failures = [
    ...judge(report, options),
    ...rollingRestartFailures(faultContext.rolled),
    ...webhookFailures(webhooks),
  ];
  const text = formatChaosReport(report);
  writeFileSync(path.join(runDir, 'report.txt'), text);
  writeFileSync(path.join(runDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\n${text}`);

  if (report.failures.length === 0 && !options.keep) {
    await removeResources(endpoints.DATABASE_URL, endpoints.KAFKA_BROKERS, resources);
  } else {
    say(
      `kept for inspection: database ${resources.databaseName}, topics ${resources.paymentsTopic}, ${resources.dlqTopic}`,
    );
  }
  cleanup.done();
  return report.failures.length === 0 ? 0 : 1;
}

/** The reasons a run fails: verify always; client invariants and bounds with --strict. */
function judge(report: ChaosReport, options: ChaosOptions): string[] {
  const failures: string[] = [];
  if (report.verify.exitCode !== 0) {
    failures.push(
      report.verify.exitCode === 1
        ? 'verify found violations'
        : `verify could not verify (exit ${report.verify.exitCode ?? 'by a signal'})`,
    );
  }
  failures.push(...loadFailures(report.load, options.strict));
  if (options.strict) {
    for (const window of report.windows) {
      if (window.boundMet === false) failures.push(`${window.label}: missed ${window.bound ?? ''}`);
    }
  }
  return failures;
}

function describeSettings(options: ChaosOptions, apis: number, brokers: string): string {
  return [
    `settings: --duration ${options.durationSeconds} --processes ${options.processes}`,
    `--rate ${options.rate} --storm-vus ${options.stormVus} --copies ${options.copies}`,
    `${options.kafka3 ? '--kafka3 ' : ''}${options.strict ? '--strict ' : ''}(${apis} APIs; Kafka ${brokers})`,
  ].join(' ');
}

async function removeResources(
  adminUrl: string,
  brokers: string,
  resources: RunResources,
): Promise<void> {
  await Promise.allSettled([
    dropDatabase(adminUrl, resources.databaseName),
    deleteTopics(brokers, [resources.paymentsTopic, resources.dlqTopic]),
  ]);
}

/** REFUND_MAX_ATTEMPTS as the run's settlement processes read it (they inherit this env). */
function refundMaxAttempts(): number {
  const value = Number(process.env.REFUND_MAX_ATTEMPTS ?? '5');
  return Number.isInteger(value) && value > 0 ? value : 5;
}

/** On a shared machine the neighbours move every latency: the report says how busy it was. */
function loadAverage(label: string): string {
  return `${label} ${os.loadavg()[0]?.toFixed(1) ?? '?'}`;
}

/** A port nothing listens on right now (the OS picks it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

/**
 * Whatever ends the run (an error, Ctrl-C, SIGTERM), frozen services are thawed first, stopped
 * ones started again, and every process chaos started is stopped. On a normal end `done()`
 * only removes the handlers (main has already stopped everything).
 */
function installCleanup(
  stack: StackControl,
  fleet: RoleFleet,
  loads: readonly RunningLoad[],
  ctx: FaultContext,
): { run: () => Promise<void>; done: () => void } {
  let ran = false;
  const lastResort = () => {
    stack.thawAllNow();
    fleet.killAllNow();
    for (const load of loads) if (isRunning(load)) load.child.kill('SIGKILL');
  };
  const run = async () => {
    if (ran) return;
    ran = true;
    stack.thawAllNow();
    for (const load of loads) if (isRunning(load)) load.child.kill('SIGTERM');
    for (const service of ctx.stopped) {
      process.stderr.write(`chaos: starting ${service} again (stopped by this run)\n`);
      await stack.start(service).catch((error: unknown) => {
        process.stderr.write(`chaos: could not start ${service}: ${String(error)}\n`);
      });
    }
    await fleet.stopAll();
    await ctx.probe.db.end().catch(() => undefined);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(
      `chaos: ${signal}: thawing, restarting and stopping what this run started\n`,
    );
    void run().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('exit', lastResort);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    run,
    done: () => {
      ran = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** The running cleanup, for a run that ends in an error. */
const active: {
  cleanup: (() => Promise<void>) | null;
  receivers: { set: { close: () => Promise<void> } } | null;
} = { cleanup: null, receivers: null };
try {
  process.exitCode = await main();
} catch (error) {
  if (error instanceof ChaosUsageError || isParseArgsError(error)) {
    process.stderr.write(`${error.message}\n${CHAOS_USAGE}\n`);
  } else {
    process.stderr.write(
      `chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  await active.cleanup?.();
  await active.receivers?.set.close();
  process.exitCode = 2;
}

function isParseArgsError(error: unknown): error is Error {
  return (
    error instanceof Error &&
    String((error as Error & { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')
  );
}
