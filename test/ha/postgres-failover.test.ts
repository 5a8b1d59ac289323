import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { applyMigrations } from '../../src/platform/database/migration-runner.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { roleDatabaseUrl } from '../../tools/support/role-database-url.js';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../tools/support/scratch-database.js';
import { haPostgresPrimaryPid, haStack } from '../support/ha-stack.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { report } from '../support/steady-load.js';

/**
 * Issue 39 (DESIGN 124): the Postgres primary is SIGKILLed while the API takes 200 keyed POST
 * /payments a second; the synchronous standby is promoted and haproxy's one address follows it.
 * Every payment answered 202 must be in the promoted database with its idempotency record: a
 * 202 is only sent after the commit, and with synchronous_commit = on a commit returns only once
 * the standby has it. The outage window (non-202 answers) is reported, not asserted.
 *
 * Needs `npm run test:ha` (DATABASE_URL: the owner through haproxy, verify-full) and a Redis and
 * Kafka in REDIS_* / KAFKA_* (the HA ones, or the single-node stack's).
 */
const RATE = Number(process.env.HA_PG_RATE ?? 200);
const DURATION_MS = Number(process.env.HA_PG_DURATION_MS ?? 25_000);
const KILL_AT_MS = 5_000;
/** A bound on one request (an answer or an abort), far above any healthy latency. */
const REQUEST_TIMEOUT_MS = 20_000;

interface Sent {
  key: string;
  sentAtMs: number;
  /** 0: no answer (connection refused, aborted after REQUEST_TIMEOUT_MS). */
  status: number;
  id?: string;
}

let database: ScratchDatabase;
let owner: pg.Pool;
/** What beforeAll got to make, for afterAll to undo even when it failed part-way. */
const made: { database?: ScratchDatabase; owner?: pg.Pool } = {};
let api: RoleProcess | undefined;

beforeAll(async () => {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl === undefined) throw new Error('DATABASE_URL is unset: run via npm run test:ha');
  await haStack(['status', 'postgres'], 30_000); // whole before we start (exit 3 otherwise)
  database = await createScratchDatabase(serverUrl, `ha_pg_${randomBytes(5).toString('hex')}`);
  made.database = database;
  await applyMigrations(database.url, createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }));
  owner = new pg.Pool({ connectionString: database.url, max: 2, connectionTimeoutMillis: 10_000 });
  made.owner = owner;
  owner.on('error', () => undefined); // its idle connections die with the primary
  await defineTier(owner, BENCH_TIER);
});

afterAll(async () => {
  await api?.stop();
  await made.owner?.end();
  // The topology whole again for the next file: the killed node rebuilt as the new standby.
  await haStack(['start', 'postgres'], 300_000);
  await haStack(['status', 'postgres'], 30_000);
  await made.database?.drop();
});

/** The API as deployed: its own process from dist/, its own login, this file's names. */
async function startApi(): Promise<{ url: string; process: RoleProcess }> {
  const suffix = randomBytes(5).toString('hex');
  const passed = Object.entries(process.env).filter(
    (entry): entry is [string, string] =>
      /^(REDIS|KAFKA)_/.test(entry[0]) && entry[1] !== undefined,
  );
  const proc = startRoleProcess('apps/api/main.js', {
    ...Object.fromEntries(passed),
    DATABASE_URL: roleDatabaseUrl(database.url, 'api'),
    REDIS_KEY_PREFIX: `ha-pg:${suffix}:`,
    KAFKA_TOPIC_PAYMENTS: `payments.ha-pg.${suffix}`,
    KAFKA_TOPIC_DLQ: `dlq.ha-pg.${suffix}`,
    KAFKA_CONSUMER_GROUP: `group-ha-pg-${suffix}`,
    SECRETS_KEYS: `ha1:${randomBytes(32).toString('base64')}`,
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
  });
  const ready = await within(60_000, 'api listening', proc.logLine('api listening'));
  return { url: `http://127.0.0.1:${String(ready.port)}`, process: proc };
}

async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`timed out after ${String(ms)} ms waiting for ${what}`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

async function post(url: string, apiKey: string, key: string, i: number) {
  try {
    const res = await fetch(`${url}/payments`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'idempotency-key': key,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ amount: 100 + i, currency: 'EUR' }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const body = (await res.json().catch(() => ({}))) as { id?: string };
    return { status: res.status, id: body.id };
  } catch {
    return { status: 0, id: undefined };
  }
}

/** Open loop: one new key every 1/RATE s for DURATION_MS; `failover` starts KILL_AT_MS in. */
async function drive(url: string, apiKey: string, failover: () => Promise<void>) {
  const started = performance.now();
  const pending: Promise<Sent>[] = [];
  let failing: Promise<void> | undefined;
  for (let i = 0; performance.now() - started < DURATION_MS; i++) {
    const wait = started + (i * 1_000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const sentAtMs = performance.now() - started;
    if (failing === undefined && sentAtMs >= KILL_AT_MS) failing = failover();
    const key = `ha-pg-${String(i)}-${randomBytes(4).toString('hex')}`;
    pending.push(post(url, apiKey, key, i).then((answer) => ({ key, sentAtMs, ...answer })));
  }
  await failing;
  return { sent: await Promise.all(pending), started };
}

describe('Postgres primary killed under load (issue 39)', () => {
  it('when the primary is SIGKILLed at 200 POST/s and the standby promoted, then every 202 is in the promoted database and POSTs succeed again', async () => {
    const merchant = await createMerchant(owner, 'HA failover', BENCH_TIER.name);
    const started = await startApi();
    api = started.process;
    const killed = await haPostgresPrimaryPid();
    let killedAtMs = 0;
    let promotedAtMs = 0;
    const { sent, started: loadStart } = await drive(started.url, merchant.apiKey, async () => {
      killedAtMs = performance.now();
      process.kill(killed, 'SIGKILL');
      await haStack(['promote', 'postgres'], 120_000);
      promotedAtMs = performance.now();
    });
    const killedAt = killedAtMs - loadStart;
    const promotedAt = promotedAtMs - loadStart;
    expect(await haPostgresPrimaryPid()).not.toBe(killed);

    const accepted = sent.filter((s) => s.status === 202);
    const failed = sent.filter((s) => s.status !== 202);
    const statuses: Record<number, number> = {};
    for (const s of sent) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
    const windowS = failed.length
      ? ((failed.at(-1)?.sentAtMs ?? 0) - (failed[0]?.sentAtMs ?? 0)) / 1_000
      : 0;
    report(
      `postgres failover: ${String(sent.length)} POSTs ${JSON.stringify(statuses)}; killed at ${(killedAt / 1_000).toFixed(1)} s, promoted ${((promotedAt - killedAt) / 1_000).toFixed(1)} s later; non-202 window ${windowS.toFixed(1)} s (first ${((failed[0]?.sentAtMs ?? 0) / 1_000).toFixed(1)} s, last ${((failed.at(-1)?.sentAtMs ?? 0) / 1_000).toFixed(1)} s)`,
    );

    // Nothing answered 202 is lost: the payment and its idempotency record, under its key.
    const { rows } = await owner.query<{ id: string; key: string }>(
      `SELECT p.id, k.idempotency_key AS key FROM payments p
         JOIN idempotency_keys k ON k.payment_id = p.id
        WHERE p.id = ANY ($1::uuid[])`,
      [accepted.map((s) => s.id)],
    );
    const stored = new Map(rows.map((row) => [row.id, row.key]));
    const lost = accepted.filter((s) => s.id === undefined || stored.get(s.id) !== s.key);
    expect(lost).toEqual([]);
    expect(accepted.length).toBeGreaterThan(RATE * (KILL_AT_MS / 1_000) * 0.5);
    // Failures are the outage's (5xx or no answer), never a client error.
    expect(failed.filter((s) => s.status >= 400 && s.status < 500)).toEqual([]);
    // After the promote, POSTs succeed again: every one of the last 2 s answered 202.
    const tail = sent.filter((s) => s.sentAtMs >= DURATION_MS - 2_000);
    expect(promotedAt).toBeLessThan(DURATION_MS - 2_000);
    expect(tail.length).toBeGreaterThan(0);
    expect(tail.filter((s) => s.status !== 202)).toEqual([]);
  });
});
