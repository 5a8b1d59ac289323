import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import type { VerifyReport } from '../../tools/verify/verify-payments.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhooks/receiver.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postSignedWebhook } from '../support/post-signed-webhook.js';
import { eventually } from '../support/settlement-harness.js';
import { getJson, postPayment, type TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { runVerifyCli } from '../support/verify-cli.js';

/**
 * `npm run verify`'s webhook check (tools/verify/verify-webhooks.ts) against a world it can be
 * sure of: payments made by the real pipeline, then an endpoint, its stored events and
 * deliveries written here as the fan-out would, and each delivery sent to a real receiver
 * (tools/webhooks/receiver.ts) signed with standardwebhooks, as the delivery worker would. First
 * consistent, then with one violation planted at a time.
 */

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
let db: TestDatabase;
let api: TestApi;
let receiver: WebhookReceiver;
let receipts: string;
let endpointId: string;
const ids: Record<string, string> = {};
/** The stored events, in delivery order: [name, event id, payment id, type, data.id]. */
const events: [string, string, string, string, string][] = [];

function verifyCli(...args: string[]) {
  return runVerifyCli(db, api.platform.config, ['--grace', '0', ...args]);
}

function withReceipts(...args: string[]) {
  return verifyCli('--webhook-receipts', receipts, ...args);
}

/** The violation codes of a `--json` run. */
async function violationCodes(run: Promise<{ stdout: string }>): Promise<string[]> {
  const report = JSON.parse((await run).stdout) as VerifyReport;
  return Object.keys(report.counts);
}

/** Sends a signed request as the delivery worker does; resolves with the status. */
function deliver(eventId: string, body: string, secret = SECRET): Promise<number> {
  return postSignedWebhook(`${receiver.origin}/hooks`, eventId, body, [secret]);
}

/** Runs `fn` with a receipts file rewritten by `edit`, then puts the original back. */
async function withEditedReceipts(
  edit: (lines: Record<string, unknown>[]) => Record<string, unknown>[],
  fn: () => Promise<void>,
) {
  const original = await readFile(receipts, 'utf8');
  const lines = original
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const edited = edit(lines).map((line) => JSON.stringify(line));
  await writeFile(receipts, `${edited.join('\n')}\n`);
  try {
    await fn();
  } finally {
    await writeFile(receipts, original);
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestPipeline(db);
  receipts = path.join(await mkdtemp(path.join(tmpdir(), 'verify-webhooks-')), 'receipts.jsonl');
  receiver = await startWebhookReceiver({ secrets: [SECRET], receiptsFile: receipts });
  const { id: merchantId, apiKey } = await api.merchant();
  for (const [name, source] of Object.entries({
    settled: 'tok_visa',
    failed: 'tok_decline',
    unsent: 'tok_visa',
  })) {
    const answer = await postPayment(api, {
      apiKey,
      body: { amount: 1000, currency: 'EUR', source },
    });
    expect(answer.status).toBe(202);
    const id = answer.json.id as string;
    ids[name] = id;
    await eventually(`${name} terminal`, async () => {
      const res = await getJson(api, `/payments/${id}`, apiKey);
      return res.json.status === 'settled' || res.json.status === 'failed' ? true : undefined;
    });
  }
  // The endpoint comes after the payments (their results owe it no stored event); its events
  // are stored later still (after the endpoint, by more than the verifier's margin).
  endpointId = crypto.randomUUID();
  await db.pool.query(
    `INSERT INTO webhook_endpoints (id, merchant_id, url, enabled_events, created_at, updated_at)
     VALUES ($1, $2, $3, '{*}', now(), now())`,
    [endpointId, merchantId, `${receiver.origin}/hooks`],
  );
  const [settled = '', failed = '', refundId] = [ids.settled, ids.failed, crypto.randomUUID()];
  events.push(
    ['settled', paymentEventId(settled, 'payment.settled'), settled, 'payment.settled', settled],
    ['failed', paymentEventId(failed, 'payment.failed'), failed, 'payment.failed', failed],
    ['refund', refundEventId(refundId, 'refund.succeeded'), settled, 'refund.succeeded', refundId],
  );
  for (const [, eventId, paymentId, type, dataId] of events) {
    const body = JSON.stringify({ id: eventId, type, subject: paymentId, data: { id: dataId } });
    await db.pool.query(
      `INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
       VALUES ($1, $2, $3, $4, $5, now() + interval '5 seconds')`,
      [eventId, merchantId, paymentId, type, body],
    );
    await db.pool.query(
      `INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id, status, delivered_at)
       VALUES ($1, $2, $3, 'delivered', now())`,
      [endpointId, eventId, paymentId],
    );
    expect(await deliver(eventId, body)).toBe(200);
  }
});
afterAll(async () => {
  await receiver.close();
  await api.close();
  await db.drop();
});

describe('npm run verify: webhooks', () => {
  it('when every stored event was delivered and received once, signed, in order, then it exits 0 with the webhook counts', async () => {
    const result = await withReceipts('--wait', '30', '--json');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as VerifyReport;
    expect(report.webhooks).toEqual({
      endpoints: 1,
      events: 3,
      deliveries: { total: 3, delivered: 3, pending: 0, failed: 0 },
      inFlight: 0,
      failedReasons: {},
      receipts: { read: 3, foreign: 0, received: 3, repeated: 0, refused: 0, judged: 3 },
    });
    const text = await withReceipts();
    expect(text.stdout).toContain('3 deliveries: 3 delivered, 0 failed, 0 pending');
    expect(text.stdout).toContain('violations    none');
  });

  it('when an endpoint existed before a result that has no stored event, then it names webhook_event_missing', async () => {
    // Put back exactly as it was: the stored events must stay later than the endpoint by more
    // than the verifier's margin, however long this file has run (a later now() would not be).
    const { rows: before } = await db.pool.query<{ created_at: Date }>(
      `UPDATE webhook_endpoints e SET created_at = now() - interval '1 hour'
         FROM webhook_endpoints old WHERE e.id = $1 AND old.id = e.id
       RETURNING old.created_at`,
      [endpointId],
    );
    try {
      const result = await verifyCli();
      expect(result.code).toBe(1);
      // Only the payment with no stored event (the others have theirs).
      expect(result.stdout).toContain('webhook_event_missing x1');
      expect(result.stdout).toContain(paymentEventId(ids.unsent ?? '', 'payment.settled'));
    } finally {
      await db.pool.query(`UPDATE webhook_endpoints SET created_at = $2 WHERE id = $1`, [
        endpointId,
        before[0]?.created_at,
      ]);
    }
  });

  it('when a stored event has no delivery to its subscribed endpoint, then it names webhook_delivery_missing; a subscription to other types owes it none', async () => {
    const [, eventId] = events[1] ?? [];
    const { rows } = await db.pool.query<Record<string, unknown>>(
      'DELETE FROM webhook_deliveries WHERE event_id = $1 RETURNING endpoint_id, event_id, payment_id, status',
      [eventId],
    );
    try {
      const result = await verifyCli();
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('webhook_delivery_missing x1');
      expect(result.stdout).toContain(`payment.failed ${eventId ?? ''} to endpoint ${endpointId}`);
      await db.pool.query(
        `UPDATE webhook_endpoints SET enabled_events = '{payment.settled,refund.succeeded}' WHERE id = $1`,
        [endpointId],
      );
      expect((await verifyCli()).code).toBe(0);
    } finally {
      await db.pool.query(`UPDATE webhook_endpoints SET enabled_events = '{*}' WHERE id = $1`, [
        endpointId,
      ]);
      const row = rows[0] ?? {};
      await db.pool.query(
        `INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id, status, delivered_at)
         VALUES ($1, $2, $3, $4, now())`,
        [row.endpoint_id, row.event_id, row.payment_id, row.status],
      );
    }
    expect((await withReceipts()).code).toBe(0);
  });

  it('when a delivery is still pending after the grace period, then it names webhook_delivery_unresolved; a failed one is reported with its reason', async () => {
    const [, settledId] = events[0] ?? [];
    const [, failedId] = events[1] ?? [];
    await db.pool.query(
      `UPDATE webhook_deliveries SET status = 'pending', delivered_at = NULL, attempts = 4,
              created_at = now() - interval '10 seconds'
        WHERE event_id = $1`,
      [settledId],
    );
    await db.pool.query(
      `UPDATE webhook_deliveries SET status = 'failed', delivered_at = NULL,
              failed_reason = 'attempts_exhausted' WHERE event_id = $1`,
      [failedId],
    );
    try {
      const result = await verifyCli();
      expect(result.code).toBe(1);
      expect(await violationCodes(verifyCli('--json'))).toEqual(['webhook_delivery_unresolved']);
      expect(result.stdout).toContain('webhook_delivery_unresolved x1');
      expect(result.stdout).toMatch(
        /payment\.settled \S+ to endpoint \S+: pending \d+ s after 4 attempts/,
      );
      expect(result.stdout).toContain('1 failed (1 attempts_exhausted), 1 pending (0 in flight)');
      // Within the grace period it is in flight, not a violation.
      const young = await runVerifyCli(db, api.platform.config, ['--grace', '600']);
      expect(young.stdout).toContain('1 pending (1 in flight)');
      expect(young.stdout).not.toContain('webhook_delivery_unresolved');
    } finally {
      await db.pool.query(
        `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), failed_reason = NULL
          WHERE event_id = ANY ($1)`,
        [[settledId, failedId]],
      );
    }
  });

  it('when a delivered event has no 2xx receipt, then it names webhook_not_received', async () => {
    const [, eventId] = events[2] ?? [];
    await withEditedReceipts(
      (lines) => lines.filter((line) => line.webhook_id !== eventId),
      async () => {
        const result = await withReceipts();
        expect(result.code).toBe(1);
        expect(result.stdout).toContain('webhook_not_received x1');
        expect(result.stdout).toContain(`refund.succeeded ${eventId ?? ''}: delivered to`);
      },
    );
  });

  it('when one event reaches the receiver under a second webhook-id, then it names webhook_reidentified and webhook_wrong_id', async () => {
    await withEditedReceipts(
      (lines) => [...lines, { ...lines[1], webhook_id: crypto.randomUUID(), attempt: 1 }],
      async () => {
        const result = await withReceipts();
        expect(result.code).toBe(1);
        expect(result.stdout).toContain('webhook_reidentified x1');
        expect(result.stdout).toContain('webhook_wrong_id x1');
        expect(result.stdout).toContain('2 webhook-ids');
      },
    );
  });

  it("when a payment's later event was first received before its earlier one, then it names webhook_out_of_order", async () => {
    const [, settledId] = events[0] ?? [];
    await withEditedReceipts(
      (lines) =>
        lines.map((line) =>
          line.webhook_id === settledId ? { ...line, received_at: new Date().toISOString() } : line,
        ),
      async () => {
        const result = await withReceipts();
        expect(result.code).toBe(1);
        expect(result.stdout).toContain('webhook_out_of_order x1');
        expect(result.stdout).toContain(`before the earlier payment.settled ${settledId ?? ''}`);
      },
    );
  });

  it('when a request is signed with another secret, then the receiver answers 401 and verify names webhook_bad_signature', async () => {
    const [, eventId, paymentId, type, dataId] = events[0] ?? [];
    const body = JSON.stringify({ id: eventId, type, subject: paymentId, data: { id: dataId } });
    const original = await readFile(receipts, 'utf8');
    try {
      const other = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
      // To a URL of no endpoint in scope: counted, not judged.
      const elsewhere = `${receiver.origin}/elsewhere`;
      expect(await postSignedWebhook(elsewhere, eventId ?? '', body, [other])).toBe(401);
      expect((await withReceipts()).stdout).toMatch(/1 to no endpoint in scope[^]*none/);
      expect(await deliver(eventId ?? '', body, other)).toBe(401);
      const result = await withReceipts();
      expect(result.code).toBe(1);
      expect(await violationCodes(withReceipts('--json'))).toEqual(['webhook_bad_signature']);
      expect(result.stdout).toContain('no secret verifies it');
      expect(result.stdout).toContain('1 refused or unanswered');
    } finally {
      await writeFile(receipts, original);
    }
  });
});
