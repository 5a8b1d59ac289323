import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VerifyReport } from '../../tools/verify/verify-payments.js';
import type { ViolationCode } from '../../tools/verify/violation.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { eventually } from '../support/settlement-harness.js';
import { postPayment, type TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { postHold, statusOf } from '../support/two-phase-harness.js';
import { runVerifyCli } from '../support/verify-cli.js';

/**
 * `npm run verify` on manual payments (issue 40 item 8), made by the real pipeline (API -> relay
 * -> Kafka -> settlement -> the acquirer role's hold books): a consistent world passes, then
 * each rule of check-hold.ts is broken by hand, one at a time, and named.
 */

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
const ids: Record<string, string> = {};

function verifyCli(...args: string[]) {
  return runVerifyCli(db, api.platform.config, args);
}

async function manual(source: string): Promise<string> {
  const created = await postPayment(api, {
    apiKey,
    body: { amount: 1000, currency: 'EUR', source, capture_method: 'manual' },
  });
  expect(created.status).toBe(202);
  return created.json.id as string;
}

function statusBecomes(id: string, status: string) {
  return eventually(`payment ${id} ${status}`, async () =>
    (await statusOf(db, id)) === status ? true : undefined,
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestPipeline(db);
  ({ apiKey } = await api.merchant());
  for (const [name, source] of [
    ['captured', 'tok_visa'],
    ['canceled', 'tok_visa'],
    ['expired', 'tok_visa'],
    ['open', 'tok_visa'],
    ['captureDeclined', 'tok_capture_decline'],
  ] as const) {
    ids[name] = await manual(source);
    await statusBecomes(ids[name], 'requires_capture');
  }
  ids.declined = await manual('tok_decline');
  const hold = (paymentId: string, action: 'capture' | 'cancel', body: unknown) =>
    postHold(api, { apiKey, paymentId, action, body });
  expect((await hold(ids.captured ?? '', 'capture', { amount_to_capture: 600 })).status).toBe(202);
  expect((await hold(ids.captureDeclined ?? '', 'capture', {})).status).toBe(202);
  const reason = { cancellation_reason: 'requested_by_customer' };
  expect((await hold(ids.canceled ?? '', 'cancel', reason)).status).toBe(202);
  // The window passes for `expired`: its job is due now, as at capture_before.
  await db.pool.query('UPDATE payments SET capture_before = now() WHERE id = $1', [ids.expired]);
  await db.pool.query('UPDATE hold_jobs SET next_attempt_at = now() WHERE payment_id = $1', [
    ids.expired,
  ]);
  await statusBecomes(ids.captured ?? '', 'settled');
  await statusBecomes(ids.canceled ?? '', 'canceled');
  await statusBecomes(ids.expired ?? '', 'canceled');
  await statusBecomes(ids.captureDeclined ?? '', 'failed');
  await statusBecomes(ids.declined, 'failed');
}, 180_000);
afterAll(async () => {
  await api.close();
  await db.drop();
});

/** Breaks one rule with `sql`, expects exit 1 naming `code` and the payment, then repairs it. */
async function expectViolation(
  code: ViolationCode,
  paymentId: string,
  sql: string[],
  repair: string[],
  args: string[] = ['--grace', '0'],
) {
  const run = (statement: string) =>
    db.pool.query(statement, statement.includes('$1') ? [paymentId] : []);
  for (const statement of sql) await run(statement);
  try {
    const result = await verifyCli(...args);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain(`${code} x`);
    expect(result.stdout).toContain(paymentId);
  } finally {
    for (const statement of repair) await run(statement);
  }
}

const UNHOLD = `UPDATE acquirer_simulator_holds
   SET state = 'held', amount_captured = 0, amount_released = 0 WHERE payment_id = $1`;

describe('npm run verify on manual payments', () => {
  it('when every manual payment was captured, canceled, expired or failed as it should, then it exits 0 and counts the new statuses', async () => {
    const result = await verifyCli('--wait', '30', '--grace', '0', '--json');
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout) as VerifyReport;
    expect(report.violations).toEqual([]);
    expect(report.payments).toMatchObject({
      total: 6,
      settled: 1,
      canceled: 2,
      failed: 2,
      requires_capture: 1,
    });
    expect(report.acquirer.calls).toBe(0);
  });

  it('when a hold is bent by hand, then it exits 1 naming each broken rule', async () => {
    const captured = ids.captured ?? '';
    await expectViolation(
      'captured_exceeds_authorized',
      captured,
      [
        'ALTER TABLE acquirer_simulator_holds DROP CONSTRAINT acquirer_simulator_holds_amounts',
        'UPDATE acquirer_simulator_holds SET amount_captured = 1200 WHERE payment_id = $1',
      ],
      ['UPDATE acquirer_simulator_holds SET amount_captured = 600 WHERE payment_id = $1'],
    );
    await expectViolation(
      'refunded_exceeds_captured',
      captured,
      [
        'ALTER TABLE payments DROP CONSTRAINT payments_refund_within_captured',
        'UPDATE payments SET amount_refunded = 700 WHERE id = $1',
      ],
      ['UPDATE payments SET amount_refunded = 0 WHERE id = $1'],
    );
    const extraOperation = (kind: string, key: string) =>
      `INSERT INTO acquirer_simulator_hold_operations
         (idempotency_key, payment_id, operation, amount, result, reference)
       VALUES ('${key}_' || $1::uuid::text, $1::uuid, '${kind}', NULL, 'approved', 'sim_injected')`;
    const dropInjected = `DELETE FROM acquirer_simulator_hold_operations
       WHERE reference = 'sim_injected' AND payment_id = $1`;
    await expectViolation(
      'capture_and_void',
      captured,
      [extraOperation('void', 'void')],
      [dropInjected],
    );
    await expectViolation(
      'duplicate_hold_operation',
      captured,
      [extraOperation('capture', 'capture_again')],
      [dropInjected],
    );
    await expectViolation(
      'manual_payment_charged',
      captured,
      [
        `INSERT INTO acquirer_simulator_charges (idempotency_key, payment_id, result, reference)
         VALUES ('charge_' || $1::uuid::text, $1::uuid, 'approved', 'sim_injected')`,
      ],
      [`DELETE FROM acquirer_simulator_charges WHERE payment_id = $1`],
    );
    const capturedBack = `UPDATE acquirer_simulator_holds
       SET state = 'captured', amount_captured = 600, amount_released = 400 WHERE payment_id = $1`;
    await expectViolation('settled_hold_not_captured', captured, [UNHOLD], [capturedBack]);
    const voidedBack = `UPDATE acquirer_simulator_holds
       SET state = 'voided', amount_released = amount_authorized WHERE payment_id = $1`;
    await expectViolation('canceled_hold_not_voided', ids.canceled ?? '', [UNHOLD], [voidedBack]);
    await expectViolation(
      'failed_hold_still_held',
      ids.captureDeclined ?? '',
      [UNHOLD],
      [voidedBack],
    );

    const open = ids.open ?? '';
    await expectViolation(
      'hold_dead_letter_missing',
      open,
      [`UPDATE hold_jobs SET state = 'dead' WHERE payment_id = $1`],
      [`UPDATE hold_jobs SET state = 'pending' WHERE payment_id = $1`],
    );
    // The expiry never ran: capture_before passed an hour ago, its job not due for a day.
    await expectViolation(
      'authorization_unresolved',
      open,
      [
        `UPDATE hold_jobs SET next_attempt_at = now() + interval '1 day' WHERE payment_id = $1`,
        `UPDATE payments SET capture_before = now() - interval '1 hour' WHERE id = $1`,
      ],
      [],
      ['--grace', '60'],
    );
    // Within capture_before + grace it is not judged yet.
    expect((await verifyCli('--grace', '7200')).code).toBe(0);
  });
});
