import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerWebhookEndpointProbe } from '../../src/webhooks/webhook-endpoint-metrics.js';
import { createIdempotencyReaper } from '../../src/idempotency/idempotency-reaper.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';
import {
  assertUnprivilegedLogin,
  PrivilegedLoginError,
} from '../../src/platform/database/privileged-login.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { startRoleProcess } from '../support/role-process.js';
import { roleDatabaseUrl, type ServiceRole } from '../support/role-login.js';
import { postRefund } from '../support/refund-client.js';
import { eventually } from '../support/settlement-harness.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import {
  deliveryState,
  insertEndpoint,
  insertMerchant,
  queueEvent,
  startTestDelivery,
} from '../support/webhook-fixtures.js';
import { startWebhookTestReceiver } from '../support/webhook-test-receiver.js';
import { reapWebhookEvents } from '../../src/webhooks/webhook-delivery-worker.js';

/** Issue #11 item 3: each process kind's login holds only what its statements need. */

let db: TestDatabase;
const logins = new Map<ServiceRole, pg.Pool>();

function login(role: ServiceRole): pg.Pool {
  let pool = logins.get(role);
  if (!pool) {
    pool = new pg.Pool({ connectionString: roleDatabaseUrl(db.url, role), max: 2 });
    logins.set(role, pool);
  }
  return pool;
}

/** The Postgres error code of `sql` run as `role`, or 'ok'. */
async function attempt(role: ServiceRole, sql: string, values: unknown[] = []): Promise<string> {
  try {
    await login(role).query(sql, values);
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

const INSUFFICIENT_PRIVILEGE = '42501';

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const pool of logins.values()) await pool.end();
  await db.drop();
});

describe("the API's login", () => {
  it('when it tries DDL, then Postgres refuses with insufficient_privilege and the table stays', async () => {
    expect(await attempt('api', 'DROP TABLE payments')).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await attempt('api', 'DROP TABLE outbox')).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await attempt('api', 'TRUNCATE payments')).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await attempt('api', 'ALTER TABLE payments ADD COLUMN x int')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
    expect(await attempt('api', 'CREATE TABLE api_scratch (id int)')).toBe(INSUFFICIENT_PRIVILEGE);
    const { rows } = await db.pool.query("SELECT to_regclass('payments') IS NOT NULL AS present");
    expect(rows[0]).toEqual({ present: true });
  });

  it('when it tries to delete or rewrite a payment, then Postgres refuses and the row is unchanged', async () => {
    const api = await startTestApi(db, { DATABASE_URL: roleDatabaseUrl(db.url, 'api') });
    try {
      const { apiKey } = await api.merchant();
      const created = await postPayment(api, { apiKey, body: { amount: 700, currency: 'EUR' } });
      expect(created.status).toBe(202);
      const id = created.json.id as string;
      expect(await attempt('api', 'DELETE FROM payments WHERE id = $1', [id])).toBe(
        INSUFFICIENT_PRIVILEGE,
      );
      expect(await attempt('api', 'UPDATE payments SET amount = 1 WHERE id = $1', [id])).toBe(
        INSUFFICIENT_PRIVILEGE,
      );
      expect(await attempt('api', 'DELETE FROM outbox')).toBe(INSUFFICIENT_PRIVILEGE);
      expect(await attempt('api', 'DELETE FROM merchants')).toBe(INSUFFICIENT_PRIVILEGE);
      const { rows } = await db.pool.query<{ amount: string }>(
        'SELECT amount FROM payments WHERE id = $1',
        [id],
      );
      expect(rows).toEqual([{ amount: '700' }]);
    } finally {
      await api.close();
      // Its event names this API's topic, which no relay here publishes to.
      await db.pool.query('DELETE FROM outbox');
    }
  });
});

describe('the relay and settlement logins', () => {
  it('when the relay reads payments or settlement changes an amount, then Postgres refuses', async () => {
    expect(await attempt('relay', 'SELECT count(*) FROM payments')).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await attempt('relay', 'SELECT count(*) FROM merchants')).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await attempt('relay', 'SELECT count(*) FROM outbox')).toBe('ok');
    // Column-level: the status columns only.
    expect(await attempt('settlement', "UPDATE payments SET status = 'settled' WHERE false")).toBe(
      'ok',
    );
    expect(await attempt('settlement', 'UPDATE payments SET amount = 1 WHERE false')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
    expect(await attempt('settlement', 'DELETE FROM payments WHERE false')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
    expect(await attempt('settlement', 'UPDATE outbox SET attempts = 0 WHERE false')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
    expect(await attempt('settlement', 'SELECT count(*) FROM idempotency_keys')).toBe(
      INSUFFICIENT_PRIVILEGE,
    );
  });
});

describe('the webhooks login', () => {
  it('when it delivers, reaps and reads its gauges, then every statement is allowed; it cannot read payments, touch the outbox, store events or edit endpoints', async () => {
    const receiver = await startWebhookTestReceiver();
    const merchantId = await insertMerchant(db.pool);
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/hooks'));
    const paymentId = randomUUID();
    const fresh = await queueEvent(db.pool, merchantId, paymentId, 'payment.settled', [
      endpoint.id,
    ]);
    const old = await queueEvent(db.pool, merchantId, paymentId, 'payment.failed', []);
    await db.pool.query(
      `UPDATE webhook_events SET created_at = now() - interval '2 days' WHERE event_id = $1`,
      [old.eventId],
    );
    const unregister = registerWebhookEndpointProbe(login('webhooks'));
    const gauge = (name: string) => metricsRegistry.getSingleMetricAsString(name);
    expect(await gauge('webhook_oldest_pending_delivery_age_seconds')).toContain(endpoint.id);
    const delivery = startTestDelivery(db);
    try {
      const deliveryId = fresh.deliveries.get(endpoint.id) ?? '';
      await eventually('delivered as the webhooks login', async () =>
        (await deliveryState(db.pool, deliveryId)).status === 'delivered' ? true : undefined,
      );
      expect(receiver.at('/hooks')).toHaveLength(1);
    } finally {
      await delivery.stop();
      await receiver.close();
    }
    expect(await reapWebhookEvents(login('webhooks'), 86_400, 10)).toBe(1);
    expect(await gauge('webhook_endpoints_disabled')).toContain(
      'webhook_endpoints_disabled{reason="gone"} 0',
    );
    expect(await gauge('webhook_oldest_pending_delivery_age_seconds')).not.toContain(endpoint.id);
    unregister();
    for (const sql of [
      'SELECT count(*) FROM payments',
      'SELECT count(*) FROM outbox',
      'INSERT INTO outbox (event_id) VALUES (gen_random_uuid())',
      'INSERT INTO webhook_events SELECT * FROM webhook_events WHERE false',
      "UPDATE webhook_endpoints SET url = 'https://example.com' WHERE false",
      'DELETE FROM webhook_endpoints WHERE false',
    ]) {
      expect(await attempt('webhooks', sql), sql).toBe(INSUFFICIENT_PRIVILEGE);
    }
  });
});

describe('every role with its own login', () => {
  let api: TestApi;

  beforeAll(async () => {
    // The API as payments_api, the relay as payments_relay, settlement (and the refund worker)
    // as payments_settlement: the deployed shape (test/support/test-pipeline.ts).
    api = await startTestPipeline(db);
  });
  afterAll(async () => {
    await api.close();
  });

  it('when payments are posted, replayed, listed, settled and declined, then every statement is allowed', async () => {
    const { apiKey } = await api.merchant();
    const ok = await postPayment(api, {
      apiKey,
      key: 'roles-1',
      body: { amount: 100, currency: 'EUR' },
    });
    const declined = await postPayment(api, {
      apiKey,
      body: { amount: 200, currency: 'EUR', source: 'tok_decline' },
    });
    expect([ok.status, declined.status]).toEqual([202, 202]);
    const replay = await postPayment(api, {
      apiKey,
      key: 'roles-1',
      body: { amount: 100, currency: 'EUR' },
    });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await getJson(api, '/payments?limit=5', apiKey)).status).toBe(200);

    for (const [res, status] of [
      [ok, 'settled'],
      [declined, 'failed'],
    ] as const) {
      await eventually(`payment ${status}`, async () => {
        const read = await getJson(api, `/payments/${res.json.id as string}`, apiKey);
        return read.json.status === status ? true : undefined;
      });
    }
    // The result events went through the relay too.
    await eventually('outbox drained', async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL',
      );
      return rows[0]?.n === 0 ? true : undefined;
    });
  });

  it('when a settled payment is refunded in part and in full, then each refund is 202 and succeeds, and the payment is fully refunded', async () => {
    const { apiKey } = await api.merchant();
    const paid = await postPayment(api, { apiKey, body: { amount: 5000, currency: 'EUR' } });
    expect(paid.status).toBe(202);
    const paymentId = paid.json.id as string;
    await eventually('payment settled', async () => {
      const read = await getJson(api, `/payments/${paymentId}`, apiKey);
      return read.json.status === 'settled' ? true : undefined;
    });

    const part = await postRefund(api, { apiKey, paymentId, body: { amount: 1000 } });
    expect(part.status, part.text).toBe(202);
    const rest = await postRefund(api, { apiKey, paymentId, body: {} });
    expect(rest.status, rest.text).toBe(202);
    expect(rest.json.amount).toBe(4000);
    const replay = await postRefund(api, {
      apiKey,
      paymentId,
      key: 'refund-replay',
      body: { amount: 1 },
    });
    // Nothing is left to refund: a clear refusal, not a 500.
    expect(replay.status, replay.text).toBe(422);

    for (const refund of [part, rest]) {
      await eventually(`refund ${refund.json.id as string} succeeded`, async () => {
        const read = await getJson(api, `/refunds/${refund.json.id as string}`, apiKey);
        return read.json.status === 'succeeded' ? true : undefined;
      });
    }
    const { rows } = await db.pool.query<{ amount_refunded: string; refunded: number }>(
      `SELECT p.amount_refunded,
              (SELECT count(*)::int FROM acquirer_simulator_refunds a
                WHERE a.payment_id = p.id AND a.result = 'approved') AS refunded
         FROM payments p WHERE p.id = $1`,
      [paymentId],
    );
    expect(rows[0]).toEqual({ amount_refunded: '5000', refunded: 2 });
  });

  it('when expired idempotency keys are reaped as the API, then they are deleted', async () => {
    await db.pool.query("UPDATE idempotency_keys SET expires_at = now() - interval '1 second'");
    const reaper = createIdempotencyReaper(login('api'), api.platform.logger, {
      batch: 10,
      intervalMs: 60_000,
    });
    expect(await reaper.runOnce()).toBeGreaterThan(0);
  });
});

describe('the start-up guard', () => {
  it('when a login owns the tables, then it is refused; a role login passes', async () => {
    await expect(assertUnprivilegedLogin(db.pool)).rejects.toBeInstanceOf(PrivilegedLoginError);
    for (const role of ['api', 'relay', 'settlement', 'webhooks'] as const) {
      await expect(assertUnprivilegedLogin(login(role))).resolves.toBeUndefined();
    }
  });

  it('when a process starts as the owner without DB_ALLOW_PRIVILEGED_LOGIN, then it exits 1 saying why', async () => {
    const config = testConfig();
    const proc = startRoleProcess('apps/api/main.js', {
      DATABASE_URL: db.url,
      REDIS_URL: config.REDIS_URL,
      KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
      PORT: '0',
      LOG_LEVEL: 'info',
    });
    // SIGCONT does not stop a process: this only waits for it to exit by itself.
    expect(await proc.stop('SIGCONT')).toBe(1);
    expect(proc.output()).toContain('DB_ALLOW_PRIVILEGED_LOGIN=true');
    expect(proc.output()).not.toContain('api listening');
  });
});
