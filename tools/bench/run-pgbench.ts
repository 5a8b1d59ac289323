import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RunResult } from './load.js';
import { percentile } from '../support/percentile.js';
import { paymentPgbenchDefines, paymentPgbenchScript } from './pgbench-script.js';

const run = promisify(execFile);

export interface PgbenchSettings {
  /** The pgbench binary. */
  pgbench: string;
  /** The database to run against (its owner's login). */
  databaseUrl: string;
  concurrency: number;
  seconds: number;
  merchantId: string;
  /** The stored response body the statement writes (as long as the API's). */
  responseBody: string;
}

/**
 * pgbench running the POST path's statement (tools/bench/pgbench-script.ts), one transaction
 * per payment, closed loop at `concurrency` for `seconds`: the reference of bench:api's new
 * payments. Latencies from pgbench's per-transaction log.
 */
export async function runPgbench(settings: PgbenchSettings): Promise<RunResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'pgbench-'));
  const script = path.join(dir, 'payment.sql');
  await writeFile(script, paymentPgbenchScript());
  const url = new URL(settings.databaseUrl);
  const { stdout } = await run(
    settings.pgbench,
    [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(settings.concurrency),
      '-j',
      '2',
      '-T',
      String(settings.seconds),
      ...paymentPgbenchDefines(settings.merchantId, settings.responseBody),
      '-f',
      script,
      '-l',
      '--log-prefix',
      path.join(dir, 'log'),
      '-h',
      url.hostname,
      '-p',
      url.port || '5432',
      '-U',
      decodeURIComponent(url.username),
      decodeURIComponent(url.pathname.slice(1)),
    ],
    {
      env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) },
      maxBuffer: 16 * 1024 * 1024,
      // pgbench stops itself after -T; the margin covers connecting and writing its logs.
      timeout: (settings.seconds + 60) * 1000,
    },
  );
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1] ?? 0);
  // Per-transaction log lines: client_id transaction_no time_us script_no time_epoch time_us_part
  const latencies: number[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.startsWith('log'))) {
    for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n')) {
      const micros = Number(line.split(' ')[2]);
      if (Number.isFinite(micros) && line !== '') latencies.push(micros / 1000);
    }
  }
  latencies.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    requests: latencies.length,
    seconds: settings.seconds,
    perSecond: round(tps),
    statuses: {},
    latencyMs: {
      p50: round(percentile(latencies, 50)),
      p95: round(percentile(latencies, 95)),
      p99: round(percentile(latencies, 99)),
      max: round(latencies[latencies.length - 1] ?? 0),
    },
  };
}
