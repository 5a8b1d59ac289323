import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, inject, it, onTestFinished, vi } from 'vitest';
import { hashApiKey } from '../../src/merchants/api-key.js';
import { REPO_ROOT } from '../support/services.js';
import { createTestDatabase, testConfig } from '../support/isolation.js';
import { roleDatabaseUrl, type ServiceRole } from '../support/role-login.js';

interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

function startProcess(entry: string, env: Record<string, string>, nodeArgs: string[] = []) {
  const child = spawn(process.execPath, [...nodeArgs, path.join(REPO_ROOT, 'dist', entry)], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<Exited>((resolve) => {
    child.on('exit', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
  /** Resolves with the first JSON log line that has `msg`. */
  const waitForLog = (msg: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const scan = () => {
        for (const line of stdout.split('\n')) {
          if (!line.startsWith('{')) continue;
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry.msg === msg) {
            resolve(entry);
            return true;
          }
        }
        return false;
      };
      if (scan()) return;
      child.stdout.on('data', () => scan());
      void exited.then((e) => {
        reject(new Error(`exited ${e.code} before "${msg}": ${e.stderr}${e.stdout}`));
      });
    });
  return { child, exited, waitForLog };
}

/**
 * The environment of a process under test: this run's services, nothing from the shell. Logs in
 * as `role`'s own login, as deployed (the API's by default; CLIs get the owner's URL explicitly).
 */
function processEnv(
  overrides: Record<string, string> = {},
  role: ServiceRole = 'api',
): Record<string, string> {
  const config = testConfig({
    DATABASE_URL: roleDatabaseUrl(inject('services').databaseUrl, role),
  });
  return {
    DATABASE_URL: config.DATABASE_URL,
    REDIS_URL: config.REDIS_URL,
    KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
    KAFKA_CONSUMER_GROUP: config.KAFKA_CONSUMER_GROUP,
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    // No load balancer here: SIGTERM closes at once (api-drain.test.ts covers the drain).
    SHUTDOWN_DRAIN_MS: '0',
    ...overrides,
  };
}

/** An OTLP collector on a free port: answers 200 (or `answerWith`) and keeps every body. */
async function recordingCollector() {
  const bodies: Buffer[] = [];
  let status = 200;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    /** Everything received so far, as one buffer (protobuf keeps strings as they are). */
    sent: () => Buffer.concat(bodies),
    requests: () => bodies.length,
    answerWith: (code: number) => {
      status = code;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

/** The API exporting spans over OTLP to `collectorPort`, after one traced request (401: no key). */
async function tracedApiAfterOneRequest(collectorPort: number, env: Record<string, string> = {}) {
  const proc = startProcess(
    'apps/api/main.js',
    processEnv({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${String(collectorPort)}/v1/traces`,
      ...env,
    }),
    ['--import', path.join(REPO_ROOT, 'dist/platform/telemetry/register-tracing.js')],
  );
  const listening = await proc.waitForLog('api listening');
  /** One traced request; its span is exported with the next batch. */
  const request = async () => {
    const res = await fetch(`http://127.0.0.1:${String(listening.port)}/payments/x`);
    expect(res.status).toBe(401);
  };
  await request();
  return { ...proc, request };
}

describe('process entry points', () => {
  it.each([
    [
      'PORT',
      'abc',
      'invalid configuration: PORT must be an integer between 0 and 65535 (got "abc")',
    ],
    ['DATABASE_URL', 'not a url', 'invalid configuration: DATABASE_URL must be a URL like'],
    [
      'KAFKA_BROKERS',
      'localhost',
      'invalid configuration: KAFKA_BROKERS must be a comma-separated list of Kafka brokers as host:port, e.g. 127.0.0.1:9092,10.0.0.2:9092 ("localhost" is not)',
    ],
    [
      'WEBHOOK_RETRY_SCHEDULE',
      '5000,x',
      'invalid configuration: WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of delays from 1 ms to 7d, each in milliseconds or with a unit (ms, s, m, h, d), e.g. 5000,300000 or 5s,5m,30m ("x" is not) (got "5000,x")',
    ],
    // The test stack's own login is the built-in payments:payments.
    [
      'NODE_ENV',
      'production',
      'invalid configuration: DATABASE_URL uses the built-in development credentials',
    ],
  ])('when %s=%j, then the process exits 1 with one line naming it', async (name, value, line) => {
    for (const entry of ['apps/api/main.js', 'apps/all/main.js', 'cli/migrate.js']) {
      const { exited } = startProcess(entry, processEnv({ [name]: value }));
      const result = await exited;
      expect(result.code, entry).toBe(1);
      expect(result.stdout, entry).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines, entry).toHaveLength(1);
      expect(lines[0], entry).toContain(line);
    }
  });

  it.each([
    [
      { OTEL_TRACES_EXPORTER: 'jaeger' },
      'invalid configuration: OTEL_TRACES_EXPORTER must list otlp or console (or be none); got "jaeger"',
    ],
    [
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio ratio' },
      'invalid configuration: OTEL_TRACES_SAMPLER must be one of',
    ],
    [
      {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '10%',
      },
      'invalid configuration: OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1',
    ],
  ])(
    'when the tracing preload gets %j, then the process exits 1 with one line naming the setting',
    async (settings, line) => {
      const preload = [
        '--import',
        path.join(REPO_ROOT, 'dist/platform/telemetry/register-tracing.js'),
      ];
      const { exited } = startProcess('apps/api/main.js', processEnv(settings), preload);
      const result = await exited;
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(line);
    },
  );

  it('when tracing exports over OTLP, then the API process sends its spans to the collector from its export thread, and SIGTERM flushes them', async () => {
    const collector = await recordingCollector();
    try {
      const proc = await tracedApiAfterOneRequest(collector.port);

      proc.child.kill('SIGTERM');
      const result = await proc.exited;
      expect(result.code).toBe(0);
      expect(result.stdout).not.toContain('the last spans were dropped');
      // The request's server span (its url.path) and the service's name were sent.
      expect(collector.sent().includes('/payments/x')).toBe(true);
      expect(collector.sent().includes('payments-api')).toBe(true);
    } finally {
      await collector.close();
    }
  });

  it('when the collector refuses spans for a while, then the API logs one outage warning however many batches fail, and one line when exports succeed again', async () => {
    const collector = await recordingCollector();
    collector.answerWith(400);
    try {
      const proc = await tracedApiAfterOneRequest(collector.port, {
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OUTAGE_LOG_INTERVAL_MS: '60000',
      });
      await proc.waitForLog('otlp collector unavailable');
      // More refused batches: one request, then its batch, at a time.
      for (let i = 0; i < 3; i++) {
        const before = collector.requests();
        await proc.request();
        await vi.waitUntil(() => collector.requests() > before, { timeout: 5_000 });
      }
      collector.answerWith(200);
      await proc.request();
      await proc.waitForLog('otlp collector available again');

      proc.child.kill('SIGTERM');
      const result = await proc.exited;
      expect(result.code).toBe(0);
      expect(collector.requests()).toBeGreaterThanOrEqual(5);
      const warnings = result.stdout
        .split('\n')
        .filter((line) => line.includes('"msg":"otlp collector unavailable"'));
      expect(warnings).toHaveLength(1);
    } finally {
      await collector.close();
    }
  });

  it('when a short-lived traced process ends after its export thread started, then it exits by itself and its last span still reaches the collector', async () => {
    const collector = await recordingCollector();
    // What a CLI does: a span, a pause long enough for a scheduled export (the thread starts
    // and goes idle), a last span, then nothing left to do.
    const tracing = pathToFileURL(path.join(REPO_ROOT, 'dist/platform/telemetry/tracing.js')).href;
    const script = [
      `import { tracer } from ${JSON.stringify(tracing)};`,
      `tracer.startSpan('first-cli-span').end();`,
      `await new Promise((resolve) => setTimeout(resolve, 600));`,
      `tracer.startSpan('last-cli-span').end();`,
    ].join('\n');
    try {
      const child = spawn(
        process.execPath,
        [
          '--import',
          path.join(REPO_ROOT, 'dist/platform/telemetry/register-tracing.js'),
          '--input-type=module',
          '-e',
          script,
        ],
        {
          cwd: REPO_ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${String(collector.port)}/v1/traces`,
            OTEL_BSP_SCHEDULE_DELAY: '100',
          },
          stdio: 'ignore',
        },
      );
      const started = Date.now();
      const exit = await new Promise<number | string | null>((resolve) => {
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.on('exit', (code, signal) => {
          clearTimeout(killer);
          resolve(code ?? signal);
        });
      });

      expect(exit).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(collector.requests()).toBeGreaterThanOrEqual(2);
      expect(collector.sent().includes('first-cli-span')).toBe(true);
      expect(collector.sent().includes('last-cli-span')).toBe(true);
    } finally {
      await collector.close();
    }
  });

  it('when the tracing collector accepts connections and never answers, then SIGTERM still exits 0 within seconds, with one line about the dropped spans', async () => {
    // The collector that hangs: accepts, reads, never answers.
    const collector = await silentServer();
    const { port } = collector;
    try {
      // One traced request, so the shutdown has a span to flush.
      const proc = await tracedApiAfterOneRequest(port);

      const started = Date.now();
      proc.child.kill('SIGTERM');
      const result = await proc.exited;
      // The exporter's own timeout is 10 s; the flush gives up after 2.
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('the last spans were dropped');
      expect(result.stdout).toContain('"msg":"shutdown complete"');
    } finally {
      await collector.close();
    }
  });

  it('when all roles run in one process, then the public port says only "ready", the internal listener has the detail and /metrics, and SIGTERM exits 0 after draining', async () => {
    // The single all-roles process needs the union of the roles' grants: it is `npm run up --
    // --single`'s local mode, which runs as the owner with the refusal explicitly lifted.
    // A migrated clone: the job gauges read the job tables (the services' own database is
    // migrated only where someone ran `npm run migrate`, not in CI).
    const db = await createTestDatabase();
    onTestFinished(() => db.drop());
    const proc = startProcess(
      'apps/all/main.js',
      processEnv({ DATABASE_URL: db.url, DB_ALLOW_PRIVILEGED_LOGIN: 'true' }),
    );
    const listening = await proc.waitForLog('api listening');
    const internal = await proc.waitForLog('internal listener ready');
    await Promise.all(
      ['relay ready', 'settlement ready', 'webhooks ready'].map((msg) => proc.waitForLog(msg)),
    );
    expect(internal.host).toBe('127.0.0.1');
    const publicUrl = `http://127.0.0.1:${String(listening.port)}`;
    const internalUrl = `http://127.0.0.1:${String(internal.port)}`;

    const open = await fetch(`${publicUrl}/readyz`);
    expect(open.status).toBe(200);
    expect(await open.json()).toEqual({ status: 'ready' });
    expect((await fetch(`${publicUrl}/metrics`)).status).toBe(404);

    const detailed = await fetch(`${internalUrl}/readyz`);
    expect(detailed.status).toBe(200);
    const body = (await detailed.json()) as { checks: { name: string; status: string }[] };
    expect(body.checks.map((c) => `${c.name}:${c.status}`)).toEqual([
      'postgres:up',
      'redis:up',
      'kafka:up',
    ]);
    // One job-gauge registration for the whole process: every kind is read. The gauges are read
    // from the tables at scrape time, each read bounded (2 s): on a loaded machine the first
    // scrape can come back without them, the next one has them.
    const jobGauges = ['settlement', 'refund', 'webhook'].map(
      (kind) => new RegExp(`^jobs\\{kind="${kind}",state="pending"\\} \\d+$`, 'm'),
    );
    const exported = await scrapeUntil(`${internalUrl}/metrics`, jobGauges);
    expect(exported).toContain('process_cpu_user_seconds_total');
    for (const gauge of jobGauges) expect(exported).toMatch(gauge);
    expect((await fetch(`${internalUrl}/healthz`)).status).toBe(200);

    proc.child.kill('SIGTERM');
    const result = await proc.exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"msg":"shutdown complete"');
  });

  it.each(['api', 'relay', 'settlement', 'webhooks'] as const)(
    'when the %s role runs alone, then it reports ready and exits 0 on SIGINT',
    async (role) => {
      const proc = startProcess(`apps/${role}/main.js`, processEnv({}, role));
      await proc.waitForLog(role === 'api' ? 'api listening' : `${role} ready`);
      proc.child.kill('SIGINT');
      expect((await proc.exited).code).toBe(0);
    },
  );

  it('when the webhooks role runs alone, then its readiness needs Postgres alone (no Redis client, Kafka not probed), and /metrics has its gauges', async () => {
    // A migrated clone: its gauges read the webhook tables.
    const db = await createTestDatabase();
    onTestFinished(() => db.drop());
    const proc = startProcess(
      'apps/webhooks/main.js',
      processEnv({ DATABASE_URL: db.roleUrl('webhooks') }, 'webhooks'),
    );
    const internal = await proc.waitForLog('internal listener ready');
    await proc.waitForLog('webhooks ready');
    const internalUrl = `http://127.0.0.1:${String(internal.port)}`;
    const detailed = await fetch(`${internalUrl}/readyz`);
    expect(detailed.status).toBe(200);
    const body = (await detailed.json()) as { checks: { name: string; status: string }[] };
    expect(body.checks.map((c) => `${c.name}:${c.status}`)).toEqual(['postgres:up']);
    const webhookJobs = /^jobs\{kind="webhook",state="pending"\} \d+$/m;
    const metrics = await scrapeUntil(`${internalUrl}/metrics`, [webhookJobs]);
    expect(metrics).toMatch(/^webhook_endpoints_disabled\{reason="failing"\} \d+$/m);
    expect(metrics).toMatch(webhookJobs);
    proc.child.kill('SIGTERM');
    const result = await proc.exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"msg":"shutdown complete"');
  });

  it('when migrate runs twice on a new database, then the second run applies nothing', async () => {
    const db = await createTestDatabase({ migrated: false });
    try {
      const first = await startProcess('cli/migrate.js', processEnv({ DATABASE_URL: db.url }))
        .exited;
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('"msg":"migrations applied"');
      const second = await startProcess('cli/migrate.js', processEnv({ DATABASE_URL: db.url }))
        .exited;
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('"msg":"schema is up to date"');
      // Every file in migrations/ is applied, in order.
      const files = (await readdir(path.join(REPO_ROOT, 'migrations')))
        .filter((f) => f.endsWith('.sql'))
        .map((f) => f.replace(/\.sql$/, ''))
        .sort();
      const applied = await db.pool.query<{ name: string }>(
        'SELECT name FROM pgmigrations ORDER BY run_on, id',
      );
      expect(applied.rows.map((r) => r.name)).toEqual(files);
      const { rows } = await db.pool.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
      );
      expect(rows.map((r) => r.tablename)).toEqual(
        expect.arrayContaining(['merchants', 'payments', 'idempotency_keys', 'outbox']),
      );
    } finally {
      await db.drop();
    }
  });

  it('when merchant:create runs, then it prints one JSON line with an id and a working API key', async () => {
    const db = await createTestDatabase();
    try {
      const child = spawn(
        process.execPath,
        [path.join(REPO_ROOT, 'dist/cli/merchant-create.js'), '--name', 'Acme Ltd'],
        { env: { ...processEnv({ DATABASE_URL: db.url }) }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const code = await new Promise((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      const printed = JSON.parse(lines[0] ?? '') as { id: string; name: string; api_key: string };
      expect(printed.name).toBe('Acme Ltd');
      expect(printed.api_key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
      const stored = await db.pool.query<{ key_hash: Buffer; tier: string }>(
        'SELECT k.key_hash, m.tier FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE m.id = $1',
        [printed.id],
      );
      expect(stored.rows).toHaveLength(1);
      expect(stored.rows[0]?.key_hash).toEqual(hashApiKey(printed.api_key));
      expect(stored.rows[0]?.tier).toBe('default');
      expect(JSON.stringify(stored.rows)).not.toContain(printed.api_key);
    } finally {
      await db.drop();
    }
  });

  it('when merchant:create has no --name, then it exits 1 with a usage line', async () => {
    const proc = startProcess('cli/merchant-create.js', processEnv());
    const result = await proc.exited;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('usage: merchant:create -- --name <name>');
  });

  it.each([
    [[]],
    [['--all', '--event-id', '6f1c2a8e-3b4d-5e6f-8a9b-0c1d2e3f4a5b']],
    [['--event-id', 'nope']],
  ])('when dlq:replay gets %j, then it exits 1 with its usage line', async (args) => {
    const child = spawn(
      process.execPath,
      [path.join(REPO_ROOT, 'dist/cli/dlq-replay.js'), ...args],
      {
        env: processEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('usage: dlq:replay -- --event-id <uuid> | --all | --list');
  });

  it.each([
    ['migrate', ['--help']],
    ['merchant-create', ['--help']],
    ['merchant-key', ['create', '-h']],
    ['merchant-tier', ['--list', '--help']],
    ['dlq-replay', ['--help']],
  ])(
    'when %s gets %j, then it prints its usage and exits 0 without touching the database',
    async (command, args) => {
      const db = await createTestDatabase({ migrated: false });
      try {
        const result = await runCommand(command, args, processEnv({ DATABASE_URL: db.url }));
        expect(result.code).toBe(0);
        expect(result.stdout).toMatch(/^usage: /);
        expect(result.stderr).toBe('');
        const tables = await db.pool.query("SELECT 1 FROM pg_tables WHERE schemaname = 'public'");
        expect(tables.rowCount).toBe(0);
      } finally {
        await db.drop();
      }
    },
  );

  it('when Postgres accepts the connection and never answers, then migrate fails within its connect timeout instead of hanging', async () => {
    const silent = await silentServer();
    const { port } = silent;
    try {
      const started = Date.now();
      const result = await runCommand(
        'migrate',
        [],
        processEnv({
          DATABASE_URL: `postgres://owner:secret@127.0.0.1:${port}/payments`,
          DATABASE_CONNECT_TIMEOUT_MS: '500',
        }),
        15_000,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('migrate failed: timeout expired');
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await silent.close();
    }
  });

  it('when migrate gets an argument it does not have, then it exits 1 with its usage and migrates nothing', async () => {
    const db = await createTestDatabase({ migrated: false });
    try {
      const result = await runCommand(
        'migrate',
        ['--dry-run'],
        processEnv({ DATABASE_URL: db.url }),
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^usage: migrate/);
      const tables = await db.pool.query("SELECT 1 FROM pg_tables WHERE schemaname = 'public'");
      expect(tables.rowCount).toBe(0);
    } finally {
      await db.drop();
    }
  });
});

/** A TCP server that accepts connections, reads them and never answers (a frozen dependency). */
/**
 * Scrapes `url` (200 each time) until every pattern matches or 20 s passed; returns the last
 * scrape. Gauges read at scrape time may miss a scrape whose read timed out.
 */
async function scrapeUntil(url: string, patterns: readonly RegExp[]): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const response = await fetch(url);
    expect(response.status).toBe(200);
    const text = await response.text();
    if (patterns.every((pattern) => pattern.test(text)) || Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}

/** Runs `dist/cli/<command>.js` with `args` to its end (SIGKILLed after `killAfterMs`). */
async function runCommand(
  command: string,
  args: string[],
  env: Record<string, string>,
  killAfterMs = 60_000,
): Promise<Exited> {
  const child = spawn(
    process.execPath,
    [path.join(REPO_ROOT, 'dist/cli', `${command}.js`), ...args],
    {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(deadline);
  return { code, stdout, stderr };
}
