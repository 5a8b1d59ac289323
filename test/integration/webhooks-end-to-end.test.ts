import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import type { VerifyReport } from '../../tools/verify/verify-payments.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhooks/receiver.js';
import type { WebhookReceipt } from '../../tools/webhooks/webhook-receipt.js';
import { startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { eventually } from '../support/settlement-harness.js';
import { startTestApi } from '../support/test-api.js';
import { runVerifyCli } from '../support/verify-cli.js';

/**
 * Issue 27's "Done when", as deployed: api, relay, settlement and webhooks each their own process
 * on their own login; endpoints pointing at local receivers (tools/webhooks/receiver.ts, which
 * verify every signature with standardwebhooks); payments with tok_visa, tok_decline and
 * tok_transient_2 and a refund; a receiver failing the first three attempts of each event; a
 * secret rotation; the loopback refusal without an allowlist; `npm run verify` on the
 * receivers' receipts; and no secret or API key in any process's log (issue 38).
 */

const LOOPBACK = { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' };
const WAIT_MS = 90_000;

let db: TestDatabase;
let fleet: DeployedFleet;
let ok: WebhookReceiver;
let failing: WebhookReceiver;
let receiptFiles: string[];
let apiKey: string;
const endpoints: Record<'ok' | 'failing', { id: string; secret: string }> = {
  ok: { id: '', secret: '' },
  failing: { id: '', secret: '' },
};
const payments: Record<string, string> = {};
let refundId = '';

interface Answer {
  status: number;
  json: Record<string, unknown>;
  text: string;
}

async function call(method: string, url: string, body?: unknown): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined
        ? {}
        : { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: the assertions read `text`
  }
  return { status: res.status, json, text };
}

const api = (method: string, route: string, body?: unknown) =>
  call(method, `${fleet.apiUrl}${route}`, body);

/** Posts a payment and waits until GET shows it settled or failed. */
async function terminalPayment(source: string): Promise<string> {
  const created = await api('POST', '/payments', { amount: 1500, currency: 'EUR', source });
  expect(created.status, created.text).toBe(202);
  const id = created.json.id as string;
  await eventually(
    `${source} payment terminal`,
    async () => {
      const res = await api('GET', `/payments/${id}`);
      return ['settled', 'failed'].includes(res.json.status as string) ? true : undefined;
    },
    WAIT_MS,
  );
  return id;
}

/** First 2xx receipt per webhook-id. */
function received(receiver: WebhookReceiver, urlPath: string): Map<string, WebhookReceipt> {
  const first = new Map<string, WebhookReceipt>();
  for (const receipt of receiver.receipts())
    if (receipt.url.endsWith(urlPath) && receipt.status === 200 && receipt.webhook_id !== null)
      if (!first.has(receipt.webhook_id)) first.set(receipt.webhook_id, receipt);
  return first;
}

function receivedAtLeast(receiver: WebhookReceiver, urlPath: string, count: number) {
  return eventually(
    `${count} events received at ${urlPath}`,
    () => {
      const got = received(receiver, urlPath);
      return Promise.resolve(got.size >= count ? got : undefined);
    },
    WAIT_MS,
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  const dir = await mkdtemp(path.join(tmpdir(), 'webhooks-e2e-'));
  receiptFiles = [path.join(dir, 'ok.jsonl'), path.join(dir, 'failing.jsonl')];
  ok = await startWebhookReceiver({ receiptsFile: receiptFiles[0] });
  failing = await startWebhookReceiver({
    receiptsFile: receiptFiles[1],
    mode: { kind: 'fail-first', attempts: 3 },
  });
  fleet = await startDeployedFleet(db, ['api', 'relay', 'settlement', 'webhooks'], {
    api: LOOPBACK,
    webhooks: {
      ...LOOPBACK,
      WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms,300ms',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '5000',
    },
  });
  apiKey = (await createMerchant(db.pool, 'Webhooks merchant')).apiKey;
}, 180_000);
afterAll(async () => {
  const codes = await fleet.stop();
  await ok.close();
  await failing.close();
  await db.drop();
  expect(codes).toEqual({ webhooks: 0, settlement: 0, relay: 0, api: 0 });
});

describe('webhooks end to end, as deployed', () => {
  it('when endpoints exist and payments settle, fail and are refunded, then each receiver gets exactly its subscribed events under their event ids, each signature verifying with the secret shown at creation, and the failing receiver gets each after three 500s with the same webhook-id', async () => {
    const subscribed = await api('POST', '/webhook_endpoints', {
      url: `${ok.origin}/ok`,
      enabled_events: ['payment.settled', 'refund.succeeded'],
    });
    expect(subscribed.status, subscribed.text).toBe(201);
    const all = await api('POST', '/webhook_endpoints', {
      url: `${failing.origin}/failing`,
      enabled_events: ['*'],
    });
    expect(all.status, all.text).toBe(201);
    for (const [name, answer] of [
      ['ok', subscribed],
      ['failing', all],
    ] as const) {
      expect(answer.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      endpoints[name] = { id: answer.json.id as string, secret: answer.json.secret as string };
    }
    ok.setSecrets([endpoints.ok.secret]);
    failing.setSecrets([endpoints.failing.secret]);

    payments.visa = await terminalPayment('tok_visa');
    payments.decline = await terminalPayment('tok_decline');
    payments.transient = await terminalPayment('tok_transient_2');
    const refund = await api('POST', `/payments/${payments.visa}/refunds`, { amount: 500 });
    expect(refund.status, refund.text).toBe(202);
    refundId = refund.json.id as string;

    const visa = payments.visa;
    const expectedOk = new Map([
      [paymentEventId(visa, 'payment.settled'), ['payment.settled', visa, visa]],
      [
        paymentEventId(payments.transient, 'payment.settled'),
        ['payment.settled', payments.transient, payments.transient],
      ],
      [refundEventId(refundId, 'refund.succeeded'), ['refund.succeeded', visa, refundId]],
    ]);
    const expectedAll = new Map([
      ...expectedOk,
      [
        paymentEventId(payments.decline, 'payment.failed'),
        ['payment.failed', payments.decline, payments.decline],
      ],
    ]);

    const gotOk = await receivedAtLeast(ok, '/ok', 3);
    const gotAll = await receivedAtLeast(failing, '/failing', 4);
    for (const [got, expected] of [
      [gotOk, expectedOk],
      [gotAll, expectedAll],
    ] as const) {
      expect([...got.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [id, receipt] of got) {
        expect([receipt.type, receipt.subject, receipt.data_id]).toEqual(expected.get(id));
        expect(receipt.event_id).toBe(id);
      }
    }
    // Every request to the subscribed endpoint verified with its secret; nothing else came.
    expect(ok.receipts().every((receipt) => receipt.signature_valid)).toBe(true);
    expect(new Set(ok.receipts().map((receipt) => receipt.type))).toEqual(
      new Set(['payment.settled', 'refund.succeeded']),
    );
    // The failing receiver: attempts 1-3 answered 500, the 4th 200, all under one webhook-id.
    for (const id of expectedAll.keys()) {
      const attempts = failing.receipts().filter((receipt) => receipt.webhook_id === id);
      expect(attempts.map((receipt) => [receipt.attempt, receipt.status])).toEqual([
        [1, 500],
        [2, 500],
        [3, 500],
        [4, 200],
      ]);
      expect(attempts.every((receipt) => receipt.signature_valid)).toBe(true);
    }
    const deliveries = await api('GET', `/webhook_endpoints/${endpoints.failing.id}/deliveries`);
    expect(deliveries.status).toBe(200);
    const rows = deliveries.json.data as { status: string; attempts: number }[];
    expect(rows).toHaveLength(4);
    expect(rows.every((row) => row.status === 'delivered' && row.attempts === 4)).toBe(true);
  });

  it('when the secret is rotated, then deliveries during the grace period verify with either secret', async () => {
    const rotated = await api('POST', `/webhook_endpoints/${endpoints.ok.id}/rotate_secret`, {
      expires_in_seconds: 600,
    });
    expect(rotated.status, rotated.text).toBe(200);
    const next = rotated.json.secret as string;
    expect(next).toMatch(/^whsec_/);
    expect(next).not.toBe(endpoints.ok.secret);
    const expires = Date.parse(rotated.json.previous_secret_expires_at as string);
    expect(expires).toBeGreaterThan(Date.now() + 500_000);
    ok.setSecrets([endpoints.ok.secret, next]);

    const id = await terminalPayment('tok_visa');
    const eventId = paymentEventId(id, 'payment.settled');
    const got = await eventually(
      'the rotated endpoint receives the new payment',
      () => Promise.resolve(received(ok, '/ok').get(eventId)),
      WAIT_MS,
    );
    // Both the old secret (index 0) and the new one (1) verify the same request.
    expect(got.valid_secrets).toEqual([0, 1]);
    endpoints.ok.secret = next;
  });

  it('when the allowlist is empty (the default), then a loopback URL is refused with 422 naming the address class, and nothing is written', async () => {
    const strict = await startTestApi(db);
    try {
      const before = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_endpoints',
      );
      const refused = await call('POST', strict.url('/webhook_endpoints'), {
        url: `${ok.origin}/ok`,
        enabled_events: ['*'],
      });
      expect(refused.status, refused.text).toBe(422);
      expect(refused.json.detail).toMatch(/127\.0\.0\.1.*loopback/);
      const after = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_endpoints',
      );
      expect(after.rows[0]?.n).toBe(before.rows[0]?.n);
    } finally {
      await strict.close();
    }
  });

  it('when npm run verify reads both receivers, then it reports 0 violations and the deliveries', async () => {
    const config = testConfig({
      KAFKA_TOPIC_PAYMENTS: fleet.env.KAFKA_TOPIC_PAYMENTS ?? '',
      KAFKA_TOPIC_DLQ: fleet.env.KAFKA_TOPIC_DLQ ?? '',
    });
    const result = await runVerifyCli(db, config, [
      '--wait',
      '60',
      '--grace',
      '0',
      '--json',
      '--webhook-receipts',
      receiptFiles.join(','),
    ]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as VerifyReport;
    expect(report.webhooks.deliveries).toEqual({ total: 9, delivered: 9, pending: 0, failed: 0 });
    // 4 events to the subscribed endpoint, 5 to the failing one (each after three 500s).
    expect(report.webhooks.receipts).toMatchObject({ received: 9, refused: 15, judged: 9 });
  });

  it('when the run is over, then no process logged a webhook secret or an API key (DESIGN 114)', async () => {
    // Replayed keyed creates and rotations add answers with secrets to the logged traffic.
    const again = await call('POST', `${fleet.apiUrl}/webhook_endpoints`, {
      url: `${ok.origin}/late`,
      enabled_events: ['*'],
    });
    expect(again.status, again.text).toBe(201);
    const logs = [...fleet.processes.entries()].map(
      ([role, proc]) => [role, proc.output()] as const,
    );
    for (const [role, output] of logs) {
      expect(output.length, role).toBeGreaterThan(0);
      expect(output, role).not.toContain('whsec_');
      expect(output, role).not.toMatch(/\bsk_/);
      expect(output, role).not.toContain(apiKey);
    }
  });
});
