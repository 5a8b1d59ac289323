import { type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startApiCpuWindow } from '../bench/api-cpu-window.js';
import {
  apiNodeArgs,
  peakRssMb,
  ROOT,
  serviceEntry,
  startProcess,
  toolEntry,
} from '../bench/bench-process.js';
import { closedLoop, constantRate, type RunResult, type Shot } from '../bench/load.js';
import { runPgbench } from '../bench/run-pgbench.js';
import { measureWebhooksConfigured, webhookTableRows } from '../bench/webhooks-configured.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { openBenchDatabase } from '../bench/bench-database.js';
import { databaseUrlWithName } from '../support/scratch-database.js';
import { exitOnHelp } from '../support/exit-on-help.js';

/**
 * `npm run bench:api`: new-payment and replay throughput and latency of the real API process
 * against the local stack, each next to a reference measured in the same run on this machine:
 * pgbench running the same SQL statement at the same concurrency, and a bare Express endpoint.
 * Not a test: it prints a table and writes reports/bench-api-<time>.{json,md}. The new-payment
 * run's API + Postgres + Redis CPU per payment is measured too (tools/bench/api-cpu-window.ts).
 *
 * Then new payments with webhook endpoints configured for the bench merchant against the same
 * merchant without any, with an A/A control, interleaved on the same process (issue 27:
 * tools/bench/webhooks-configured.ts).
 *
 * Settings (environment): BENCH_CONCURRENCY (16), BENCH_SECONDS (10), BENCH_LOG_LEVEL (warn),
 * BENCH_API_NODE_ARGS (node flags for the API process only, e.g. --max-semi-space-size=8),
 * BENCH_WEBHOOK_CYCLES (30; 0 skips the webhook A/B), BENCH_WEBHOOK_SLICE_SECONDS (1.5),
 * BENCH_WEBHOOK_ENDPOINTS (3).
 */

exitOnHelp(`usage: npm run bench:api
New-payment and replay throughput of the API process next to pgbench running the same SQL and a
bare Express endpoint; writes reports/bench-api-<time>.{json,md}. No arguments.
Environment: BENCH_CONCURRENCY (16), BENCH_SECONDS (10), BENCH_LOG_LEVEL (warn), PGBENCH,
BENCH_API_NODE_ARGS (node flags for the API process only), BENCH_WEBHOOK_CYCLES (30; 0 skips
the webhooks-configured A/B), BENCH_WEBHOOK_SLICE_SECONDS (1.5), BENCH_WEBHOOK_ENDPOINTS (3).`);

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';
const PGBENCH = process.env.PGBENCH ?? '/usr/lib/postgresql/15/bin/pgbench';
const WEBHOOK_CYCLES = Number(process.env.BENCH_WEBHOOK_CYCLES ?? 30);
const WEBHOOK_SLICE_SECONDS = Number(process.env.BENCH_WEBHOOK_SLICE_SECONDS ?? 1.5);
const WEBHOOK_ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 3);

const config = loadConfig();
const logger = createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' });
const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);

function databaseUrl(name: string): string {
  return databaseUrlWithName(config.DATABASE_URL, name);
}

async function main(): Promise<void> {
  const bench = await openBenchDatabase(config, logger, 'bench_api');
  const { pool, merchant } = bench;
  const database = bench.name;
  const children: ChildProcess[] = [];
  try {
    const api = await startProcess(
      serviceEntry('apps/api/main.js'),
      // Loopback allowed: the webhook A/B's endpoints point at the bare Express listener.
      {
        ...bench.apiEnv(LOG_LEVEL, Math.max(CONCURRENCY, 4)),
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
      },
      '/healthz',
      apiNodeArgs(),
    );
    children.push(api.child);
    const bare = await startProcess(toolEntry('cli/bare-express.js'), {}, '/');
    children.push(bare.child);

    const body = JSON.stringify({ amount: 1000, currency: 'EUR' });
    const headers = (key: string) => ({
      authorization: `Bearer ${merchant.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    });
    const newPayment = (): Shot => ({
      method: 'POST',
      path: '/payments',
      headers: headers(randomUUID()),
      body,
    });

    say(`warm-up (2 s), then ${SECONDS} s per scenario at concurrency ${CONCURRENCY}`);
    await closedLoop(api.port, CONCURRENCY, 2, newPayment);
    await closedLoop(bare.port, CONCURRENCY, 2, newPayment);

    say('new payments (closed loop; API, Postgres and Redis CPU measured)');
    const cpuWindow = await startApiCpuWindow(api.child.pid ?? 0);
    const created = await closedLoop(api.port, CONCURRENCY, SECONDS, newPayment);
    const newPaymentsCpu = await cpuWindow(created.statuses['202'] ?? 0);
    say('pgbench, same statement, same concurrency');
    const sample = await pool.query<{ response_body: string }>(
      'SELECT response_body FROM idempotency_keys LIMIT 1',
    );
    const reference = await runPgbench({
      pgbench: PGBENCH,
      databaseUrl: databaseUrl(database),
      concurrency: CONCURRENCY,
      seconds: SECONDS,
      merchantId: merchant.id,
      responseBody: sample.rows[0]?.response_body ?? '{}',
    });
    const halfRate = Math.max(1, Math.round(created.perSecond / 2));
    say(`new payments at half the peak rate (${halfRate}/s, open loop)`);
    const atHalf = await constantRate(api.port, halfRate, SECONDS, newPayment);

    // Create the keys to replay at the benchmark's own concurrency (a 1,000-connection burst
    // would measure socket buffers, not the service).
    const replayKeys = Array.from({ length: 1_000 }, () => randomUUID());
    const pending = [...replayKeys];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let key = pending.pop(); key !== undefined; key = pending.pop()) {
          const res = await fetch(`http://127.0.0.1:${api.port}/payments`, {
            method: 'POST',
            headers: headers(key),
            body,
          });
          await res.text();
        }
      }),
    );
    say('replays (Redis hit, closed loop)');
    const replays = await closedLoop(api.port, CONCURRENCY, SECONDS, (i) => ({
      method: 'POST',
      path: '/payments',
      headers: headers(replayKeys[i % replayKeys.length] ?? ''),
      body,
    }));
    say('bare Express endpoint (closed loop)');
    const bareRun = await closedLoop(bare.port, CONCURRENCY, SECONDS, newPayment);
    const webhooks =
      WEBHOOK_CYCLES > 0
        ? await (async () => {
            say(
              `new payments, merchant without webhook endpoints / again (A/A) / with ${WEBHOOK_ENDPOINTS}: ${WEBHOOK_CYCLES} cycles of ${WEBHOOK_SLICE_SECONDS} s slices`,
            );
            return measureWebhooksConfigured(
              api.port,
              merchant.apiKey,
              {
                cycles: WEBHOOK_CYCLES,
                sliceSeconds: WEBHOOK_SLICE_SECONDS,
                concurrency: CONCURRENCY,
                endpoints: WEBHOOK_ENDPOINTS,
                receiverUrl: `http://127.0.0.1:${bare.port}`,
              },
              newPayment,
              say,
            );
          })()
        : null;
    const rssMb = await peakRssMb(api.child.pid ?? 0);

    const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 10;
    const report = {
      date: new Date().toISOString(),
      machine: { cores: (await import('node:os')).cpus().length, node: process.version },
      settings: {
        concurrency: CONCURRENCY,
        seconds: SECONDS,
        apiLogLevel: LOG_LEVEL,
        apiNodeArgs: apiNodeArgs(),
      },
      newPayments: created,
      newPaymentsCpu,
      pgbenchSameStatement: reference,
      newPaymentsAtHalfPeak: { rate: halfRate, ...atHalf },
      replays,
      bareExpress: bareRun,
      webhooksConfigured: webhooks,
      apiPeakRssMb: rssMb,
      ratios: {
        newPaymentsVsPgbenchPct: ratio(created.perSecond, reference.perSecond),
        // Issue 29: an API doing the SQL's and Express's work can reach at most this bound.
        newPaymentsVsBoundPct: ratio(
          created.perSecond,
          1 / (1 / reference.perSecond + 1 / bareRun.perSecond),
        ),
        replaysVsBareExpressPct: ratio(replays.perSecond, bareRun.perSecond),
      },
      targets: {
        newPaymentsVsBoundPct: 60,
        cpuMsPerNewPayment: 0.55,
        replaysVsBareExpressPct: 70,
        apiPeakRssMb: 150,
      },
    };
    const row = (name: string, r: RunResult, ref = '') =>
      `| ${name} | ${r.perSecond} | ${r.latencyMs.p50} | ${r.latencyMs.p95} | ${r.latencyMs.p99} | ${ref} |`;
    const table = [
      `Concurrency ${CONCURRENCY}, ${SECONDS} s per scenario, API log level ${LOG_LEVEL}, API node flags ${apiNodeArgs().join(' ') || 'none'}, ${report.machine.cores} cores, Node ${process.version}.`,
      '',
      '| scenario | req/s | p50 ms | p95 ms | p99 ms | vs reference |',
      '|---|---|---|---|---|---|',
      row(
        'new payments (API)',
        created,
        `${report.ratios.newPaymentsVsPgbenchPct}% of pgbench; ${report.ratios.newPaymentsVsBoundPct}% of 1/(1/pgbench + 1/bare Express) (target >= 60%)`,
      ),
      row('pgbench, same SQL', reference),
      row(`new payments at ${halfRate}/s (half peak)`, atHalf),
      row(
        'replays (Redis hit)',
        replays,
        `${report.ratios.replaysVsBareExpressPct}% of bare Express (target >= 70%)`,
      ),
      row('bare Express endpoint', bareRun),
      ...(webhooks ? webhookTableRows(webhooks) : []),
      '',
      `API + Postgres + Redis CPU per new payment: ${newPaymentsCpu.msPerPayment.total} ms (api ${newPaymentsCpu.msPerPayment.api}, Postgres ${newPaymentsCpu.msPerPayment.postgres}, Redis ${newPaymentsCpu.msPerPayment.redis}; target <= 0.55 ms).`,
      `API peak RSS: ${rssMb} MB (target <= 150 MB). Status codes: new ${JSON.stringify(created.statuses)}, replays ${JSON.stringify(replays.statuses)}.`,
    ].join('\n');
    process.stdout.write(`${table}\n`);
    await mkdir(path.join(ROOT, 'reports'), { recursive: true });
    const stamp = report.date.replaceAll(':', '-').slice(0, 19);
    await writeFile(
      path.join(ROOT, 'reports', `bench-api-${stamp}.json`),
      JSON.stringify(report, null, 2),
    );
    await writeFile(
      path.join(ROOT, 'reports', `bench-api-${stamp}.md`),
      `# API benchmark ${report.date}\n\n${table}\n`,
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await bench.close();
  }
}

await main();
