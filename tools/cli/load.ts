import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SCENARIOS } from '../../k6/scenarios/index.js';
import { baseUrls, runId as runIdOf } from '../../k6/scenarios/settings.js';
import { repoRoot } from '../chaos/repo-root.js';
import { driveRun } from '../load/drive-run.js';
import { findUserK6, K6_MISSING, runK6 } from '../load/k6-engine.js';
import { createLoadMerchants, ownerDatabaseUrl } from '../load/load-merchants.js';
import { formatLoadSummary } from '../load/load-summary.js';
import { parseReceiverMode } from '../webhooks/parse-receiver-mode.js';
import { startReceiverSet, type ReceiverSet } from '../webhooks/start-receiver-set.js';

/** A storm whose merchants each have webhook endpoints on local receivers, judged by verify. */
const WEBHOOKS_STORM = 'webhooks-storm';

const USAGE = `usage: npm run load -- <scenario> [--engine node|k6] [--samples <file>] [--summary <file>]
                       [-- <k6 run options>]
  scenarios: ${[...Object.keys(SCENARIOS), WEBHOOKS_STORM].join(', ')}
  --engine   node (default): the project's own driver (undici); k6: the same scenario under the
             k6 on your PATH (or $K6), which the project never installs
  --samples  write every request (end time, duration, status, error, name) as JSON lines
  --summary  where the summary JSON goes (default reports/<RUN_ID>/summary.json)
Environment: the scenario's settings (header of k6/scenarios/<scenario>.js: BASE_URL or BASE_URLS,
  KEYS, COPIES, VUS, RATE, DURATION, P95_MS, P99_MS, ...), and
  API_KEYS           merchants' keys; when unset, MERCHANTS (2) merchants are created on the bench
                     tier as the owner (MIGRATION_DATABASE_URL, else DATABASE_URL, else the stack's)
  RUN_ID             prefix of every Idempotency-Key (default load-<scenario>-<time>)
  REQUEST_TIMEOUT_MS a request unanswered this long counts as no answer (default 60000)
  WEBHOOKS=1         first start a receiver per mode of WEBHOOK_RECEIVER_MODES (default ok; e.g.
                     ok,fail-for:30,hang-for:20: a failing mode needs a webhooks role with a short
                     WEBHOOK_RETRY_SCHEDULE), each with an endpoint per merchant
  VERIFY=1           then run npm run verify on the run (VERIFY_WAIT, default 120 s), with the
                     receivers' receipts; ${WEBHOOKS_STORM} sets WEBHOOKS=1 and VERIFY=1
Exit status: 0 every threshold held (and verify passed), 1 a threshold or verify failed,
2 could not run.`;

function log(line: string): void {
  process.stderr.write(`load: ${line}\n`);
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      engine: { type: 'string', default: 'node' },
      samples: { type: 'string' },
      summary: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [name = '', ...k6Args] = positionals;
  const scenarioName = name === WEBHOOKS_STORM ? 'storm' : name;
  const scenario = SCENARIOS[scenarioName];
  if (!scenario || (values.engine !== 'node' && values.engine !== 'k6')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const root = repoRoot();
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (name === WEBHOOKS_STORM) {
    env.WEBHOOKS ??= '1';
    env.VERIFY ??= '1';
  }
  const k6 = values.engine === 'k6' ? findUserK6(env) : null;
  if (values.engine === 'k6' && k6 === null) {
    process.stderr.write(`${K6_MISSING}\n`);
    return 2;
  }
  const engineLabel = values.engine === 'k6' ? 'k6' : 'load';
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  env.RUN_ID = env.RUN_ID
    ? runIdOf(env, name, engineLabel)
    : `${engineLabel}-${name}-${stamp}-${randomBytes(2).toString('hex')}`;
  const runDir = path.join(root, 'reports', env.RUN_ID);
  mkdirSync(runDir, { recursive: true });
  const summaryFile = values.summary ?? path.join(runDir, 'summary.json');

  const needsOwner = !env.API_KEYS || env.VERIFY === '1';
  const ownerUrl = needsOwner ? await ownerDatabaseUrl(env, root) : '';
  if (!env.API_KEYS) {
    const count = Number(env.MERCHANTS ?? '2');
    if (!Number.isInteger(count) || count < 1) throw new Error('MERCHANTS must be an integer >= 1');
    env.API_KEYS = (await createLoadMerchants(ownerUrl, env.RUN_ID, count)).join(',');
    log(`created ${count} merchants for run ${env.RUN_ID}`);
  }

  let receivers: ReceiverSet | null = null;
  const stop = new AbortController();
  let signals = 0;
  const onSignal = () => {
    signals++;
    if (signals > 1) process.exit(130);
    log('stopping: iterations in flight are cut short (again to quit at once)');
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    if (env.WEBHOOKS === '1') {
      const modes = (env.WEBHOOK_RECEIVER_MODES ?? 'ok')
        .split(',')
        .map((m) => parseReceiverMode(m));
      receivers = await startReceiverSet({
        modes,
        dir: runDir,
        apiUrl: baseUrls(env)[0] ?? '',
        apiKeys: env.API_KEYS.split(','),
      });
      log(`webhook receivers ready: ${receivers.files.join(', ')}`);
    }
    let status: number;
    if (k6 !== null) {
      const code = await runK6({
        k6,
        root,
        script: name === WEBHOOKS_STORM ? 'storm' : name,
        env,
        summaryFile,
        extraArgs: k6Args,
      });
      log(`k6 exited ${code}; summary ${path.relative(root, summaryFile)}`);
      status = code === 0 ? 0 : code === 99 ? 1 : 2;
    } else {
      const summary = await driveRun({
        name,
        scenario,
        env,
        runId: env.RUN_ID,
        summaryFile,
        ...(values.samples ? { samplesFile: values.samples } : {}),
        stop: stop.signal,
        log,
      });
      process.stdout.write(formatLoadSummary(summary));
      log(`summary ${path.relative(root, summaryFile)}`);
      status = summary.passed ? 0 : 1;
    }
    const receipts = receivers ? ['--webhook-receipts', receivers.files.join(',')] : [];
    if (env.VERIFY === '1' && !stop.signal.aborted) {
      const verifyStatus = await runVerify(root, { ...env, DATABASE_URL: ownerUrl }, [
        '--wait',
        env.VERIFY_WAIT ?? '120',
        '--key-prefix',
        env.RUN_ID,
        ...receipts,
      ]);
      if (status === 0) status = verifyStatus === 0 ? 0 : verifyStatus === 1 ? 1 : 2;
    } else {
      log(
        `check it with: npm run verify -- --wait 120 --key-prefix ${env.RUN_ID} ${receipts.join(' ')}`,
      );
    }
    return status;
  } finally {
    await receivers?.close();
  }
}

/** `npm run verify` on the run, its report on this terminal; resolves with its exit code. */
function runVerify(root: string, env: NodeJS.ProcessEnv, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [path.join(root, 'dist-tools', 'tools', 'cli', 'verify.js'), ...args],
      { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.on('error', () => {
      resolve(2);
    });
    child.on('close', (code) => {
      resolve(code ?? 2);
    });
  });
}

try {
  process.exitCode = await main();
} catch (error) {
  log(error instanceof Error ? error.message : String(error));
  process.exitCode = 2;
}
