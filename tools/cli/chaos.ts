import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import {
  CHAOS_USAGE,
  describeChaosOptions,
  isChaosUsageError,
  parseChaosOptions,
} from '../chaos/chaos-options.js';
import { formatChaosReport, summarizeRequests, type ChaosReport } from '../chaos/chaos-report.js';
import { createChaosMerchants } from '../chaos/create-chaos-merchants.js';
import { planFaults, planHaFaults, TAIL_SECONDS } from '../chaos/fault-plan.js';
import type { FaultWindow } from '../chaos/fault-window.js';
import { HaRun } from '../chaos/ha-run.js';
import { installCleanup } from '../chaos/install-cleanup.js';
import { addRunRoles } from '../chaos/add-run-roles.js';
import { judgeChaosRun } from '../chaos/judge-chaos-run.js';
import {
  loadResults,
  readLoadSamples,
  startChaosLoad,
  stopLoads,
  type RunningLoad,
} from '../chaos/load-processes.js';
import { unresolvedRequests } from '../chaos/load-results.js';
import { ENTRY_POINTS, repoRoot } from '../chaos/repo-root.js';
import { ownerEnv } from '../chaos/owner-env.js';
import { RoleFleet, ROLES, type Role } from '../chaos/role-fleet.js';
import { RELAY_LEASE_MS, RELAY_PAUSE_SECONDS, refundMaxAttempts } from '../chaos/role-settings.js';
import { rollingRestartFailures, rollingRestartLines } from '../chaos/rolling-restart.js';
import { runChecked, runCommand } from '../chaos/run-command.js';
import { runFault, type FaultContext } from '../chaos/run-fault.js';
import { createDatabase, removeRunResources, runResources } from '../chaos/run-resources.js';
import { StackControl, type StackService } from '../chaos/stack-control.js';
import { sleep, Timeline } from '../chaos/timeline.js';
import { noteReceivers, startChaosReceivers, startFailures } from '../chaos/webhook-receivers.js';
import { summarizeWebhooks, webhookFailures, webhookLines } from '../chaos/webhook-summary.js';
import { roleDatabaseUrl } from '../support/role-database-url.js';

/** Verify judges every payment once the pipeline drained; a few seconds absorb clock skew. */
const VERIFY_GRACE_SECONDS = 5;

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
  const stack = new StackControl(root, options.ha ? 'ha' : 'single');
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
    env: {},
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
  const env = ownerEnv(resources, endpoints);
  faultContext.env = env;

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
  const apiKeys = await createChaosMerchants(node, runId);

  const { apiUrls, acquirerAdminUrl } = await addRunRoles(fleet, roleEnv, options.processes);
  faultContext.acquirerAdminUrl = acquirerAdminUrl;
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
  const ha = options.ha
    ? new HaRun({
        root,
        runId,
        runDir,
        env,
        db,
        timeline,
        verifyWaitSeconds: options.verifyWaitSeconds,
      })
    : null;
  noteReceivers(receivers, timeline);
  // The load runs until TAIL_SECONDS after the last fault was undone (stopped with SIGINT): a
  // slow restart then never leaves a later fault without load.
  loads.push(...startChaosLoad({ root, runDir, runId, apiKeys, apiUrls, options }));
  ha?.startLedger(apiUrls, apiKeys[0] ?? '');
  timeline.note(
    `load started: storm (${options.stormVus} VUs x ${options.copies} copies over ${apiUrls.length} APIs) and mix (${options.rate}/s with failure tokens), the refund storm and the capture race (manual payments)`,
  );

  const windows: FaultWindow[] = [];
  const plan = options.ha
    ? planHaFaults(options.durationSeconds)
    : planFaults(options.durationSeconds, options.kafka3, RELAY_PAUSE_SECONDS);
  for (const fault of plan) {
    await sleep(fault.atSeconds * 1000 - timeline.now());
    if (fault.action.kind === 'kill-role' && fault.action.role === 'webhooks')
      startFailures(receivers, timeline);
    const window = await runFault(fault, faultContext);
    windows.push(window);
    await ha?.checkpoint(window);
  }
  timeline.note(`every fault undone; ${TAIL_SECONDS} s more load`);
  await sleep(TAIL_SECONDS * 1000);
  const loadCodes = await stopLoads(loads);
  const ledgerSamples = (await ha?.stopLedger()) ?? [];
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
  const samples = [...samplesByScript.flatMap((set) => set.samples), ...ledgerSamples];
  const report: ChaosReport = {
    runId,
    settings: `${describeChaosOptions(options, apiUrls.length, endpoints.KAFKA_BROKERS)}\n${conditionsAtStart}, ${loadAverage('at the end')}`,
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
  const leaders = ha?.summary(samples, timeline.startedAt, windows);
  report.notes.push(...(leaders?.lines ?? []));
  report.failures = [
    ...judgeChaosRun(report, options),
    ...(leaders?.failures ?? []),
    ...rollingRestartFailures(faultContext.rolled),
    ...webhookFailures(webhooks),
  ];
  const text = formatChaosReport(report);
  writeFileSync(path.join(runDir, 'report.txt'), text);
  writeFileSync(path.join(runDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\n${text}`);

  if (report.failures.length === 0 && !options.keep) {
    await removeRunResources(endpoints.DATABASE_URL, env, resources);
  } else {
    say(
      `kept for inspection: database ${resources.databaseName}, topics ${resources.paymentsTopic}, ${resources.dlqTopic}`,
    );
  }
  cleanup.done();
  return report.failures.length === 0 ? 0 : 1;
}

/** On a shared machine the neighbours move every latency: the report says how busy it was. */
function loadAverage(label: string): string {
  return `${label} ${os.loadavg()[0]?.toFixed(1) ?? '?'}`;
}

/** The running cleanup, for a run that ends in an error. */
const active: {
  cleanup: (() => Promise<void>) | null;
  receivers: { set: { close: () => Promise<void> } } | null;
} = { cleanup: null, receivers: null };
try {
  process.exitCode = await main();
} catch (error) {
  if (isChaosUsageError(error)) {
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
