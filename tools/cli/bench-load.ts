import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from '../chaos/repo-root.js';
import type { LoadSummary } from '../load/load-summary.js';

const USAGE = `usage: npm run bench:load -- [--seconds <n>] [--concurrency <n>]
The load driver's own cost: requests per second it sustains on one core (taskset -c 0) against a
bare node:http endpoint on the other (taskset -c 1), running the real storm scenario (one copy
per key, so every request is a new key and every invariant is judged), and its CPU per request;
the reference in the same run is a plain node:http keep-alive client in a closed loop at the same
concurrency on the same core. Defaults: --seconds 15 --concurrency 32. Writes
reports/bench-load-<time>.json.`;

/** One client's run: requests, seconds, the client's and the endpoint's CPU. */
interface ClientRun {
  client: string;
  requests: number;
  seconds: number;
  perSecond: number;
  clientCpuMsPerRequest: number;
  endpointCpuMsPerRequest: number;
}

/** `taskset -c <core>` when there are two cores and taskset exists; else nothing (reported). */
function pinned(core: number): string[] {
  if (os.availableParallelism() < 2) return [];
  try {
    execFileSync('sh', ['-c', 'command -v taskset'], { stdio: 'ignore' });
    return ['taskset', '-c', String(core)];
  } catch {
    return [];
  }
}

function start(command: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const [file = '', ...args] = command;
  return spawn(file, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
}

function exited(child: ChildProcess): Promise<number> {
  return new Promise((resolve) =>
    child.on('close', (code) => {
      resolve(code ?? -1);
    }),
  );
}

async function endpointCpuMs(port: number): Promise<number> {
  const body = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/cpu', agent: false }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => {
          resolve(text);
        });
      })
      .on('error', reject);
  });
  return (JSON.parse(body) as { cpuMs: number }).cpuMs;
}

/** The reference client: node:http keep-alive, closed loop, printing its figures as JSON. */
async function referenceClient(url: string, seconds: number, concurrency: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  let requests = 0;
  let n = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ amount: 1000, currency: 'EUR' });
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path: '/payments',
          agent,
          headers: {
            authorization: 'Bearer sk_bench',
            'idempotency-key': `ref-${n++}`,
            'content-type': 'application/json',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => {
            JSON.parse(text);
            requests++;
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) await one();
    }),
  );
  const used = process.cpuUsage(cpu);
  agent.destroy();
  process.stdout.write(
    `${JSON.stringify({ requests, seconds: (performance.now() - started) / 1000, cpuMs: (used.user + used.system) / 1000 })}\n`,
  );
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '15' },
      concurrency: { type: 'string', default: '32' },
      'reference-client': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const seconds = Number(values.seconds);
  const concurrency = Number(values.concurrency);
  if (!(seconds > 0) || !Number.isInteger(concurrency) || concurrency < 1) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (values['reference-client']) {
    await referenceClient(values['reference-client'], seconds, concurrency);
    return 0;
  }
  const root = repoRoot();
  const tools = path.join(root, 'dist-tools', 'tools');
  const endpoint = start(
    [...pinned(1), process.execPath, path.join(tools, 'cli', 'bare-endpoint.js')],
    process.env,
  );
  const port = await new Promise<number>((resolve, reject) => {
    endpoint.stdout?.once('data', (chunk: Buffer) => {
      resolve((JSON.parse(chunk.toString()) as { port: number }).port);
    });
    endpoint.once('error', reject);
  });
  const url = `http://127.0.0.1:${port}`;
  const runs: ClientRun[] = [];
  const measure = async (
    client: string,
    run: () => Promise<{ requests: number; seconds: number; cpuMs: number }>,
  ) => {
    const before = await endpointCpuMs(port);
    const figures = await run();
    const endpointMs = (await endpointCpuMs(port)) - before;
    runs.push({
      client,
      requests: figures.requests,
      seconds: round(figures.seconds),
      perSecond: Math.round(figures.requests / figures.seconds),
      clientCpuMsPerRequest: round(figures.cpuMs / figures.requests, 4),
      endpointCpuMsPerRequest: round(endpointMs / figures.requests, 4),
    });
  };
  try {
    const summaryFile = path.join(os.tmpdir(), `bench-load-${process.pid}.json`);
    await measure('load driver (storm, 1 copy per key)', async () => {
      const child = start(
        [
          ...pinned(0),
          process.execPath,
          path.join(tools, 'cli', 'load.js'),
          'storm',
          '--summary',
          summaryFile,
        ],
        {
          ...process.env,
          BASE_URL: url,
          API_KEYS: 'sk_bench',
          RUN_ID: `bench-load-${process.pid}`,
          KEYS: '100000000',
          COPIES: '1',
          VUS: String(concurrency),
          MAX_DURATION: `${seconds}s`,
        },
      );
      child.stdout?.resume();
      await exited(child);
      const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as LoadSummary;
      const broken = summary.thresholds.filter((t) => !t.ok && t.metric !== 'storm_keys');
      if (broken.length > 0)
        throw new Error(`the driver's run broke ${broken.map((t) => t.metric).join(', ')}`);
      return {
        requests: summary.requests.total,
        seconds: summary.seconds,
        cpuMs: summary.driver.cpuMs,
      };
    });
    await measure('reference: node:http keep-alive loop', async () => {
      const child = start(
        [
          ...pinned(0),
          process.execPath,
          path.join(tools, 'cli', 'bench-load.js'),
          '--reference-client',
          url,
          '--seconds',
          String(seconds),
          '--concurrency',
          String(concurrency),
        ],
        process.env,
      );
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await exited(child);
      return JSON.parse(out) as { requests: number; seconds: number; cpuMs: number };
    });
  } finally {
    endpoint.kill('SIGTERM');
  }
  const [driver, reference] = runs;
  const report = {
    at: new Date().toISOString(),
    machine: `${os.availableParallelism()} cores, load average at the end ${os.loadavg()[0]?.toFixed(2) ?? '?'}`,
    pinned:
      pinned(0).length > 0
        ? 'client on core 0, endpoint on core 1'
        : 'not pinned (no taskset or one core)',
    seconds,
    concurrency,
    runs,
    driverShareOfReference:
      driver && reference ? round(driver.perSecond / reference.perSecond, 3) : null,
  };
  const lines = [
    `bench:load (${report.machine}; ${report.pinned}; ${seconds} s at concurrency ${concurrency})`,
    `  ${'client'.padEnd(40)} ${'req/s'.padStart(8)} ${'client CPU ms/req'.padStart(18)} ${'endpoint CPU ms/req'.padStart(20)}`,
    ...runs.map(
      (r) =>
        `  ${r.client.padEnd(40)} ${String(r.perSecond).padStart(8)} ${r.clientCpuMsPerRequest.toFixed(4).padStart(18)} ${r.endpointCpuMsPerRequest.toFixed(4).padStart(20)}`,
    ),
    `  the driver sustains ${report.driverShareOfReference ?? '?'} of the reference client's rate on one core`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  mkdirSync(path.join(root, 'reports'), { recursive: true });
  const file = path.join(
    root,
    'reports',
    `bench-load-${report.at.replace(/\D/g, '').slice(0, 14)}.json`,
  );
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`  ${path.relative(root, file)}\n`);
  return 0;
}

function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

try {
  process.exitCode = await main();
} catch (error) {
  process.stderr.write(`bench:load: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
