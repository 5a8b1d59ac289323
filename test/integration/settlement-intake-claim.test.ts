import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { insertPaymentOnce } from '../../src/payments/payment-insert-single.js';
import { newPaymentResource } from '../../src/payments/payment-resource.js';
import {
  recordAndClaimCreatedEvents,
  type CreatedEvent,
} from '../../src/settlement/record-created-events.js';
import { claimDueJobs, completePayments } from '../../src/settlement/settlement-job-store.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';

/**
 * Claim on insert (issue 29): the intake that records settlement jobs claims the first of them
 * for the worker's free slots in the same statement, with the engine's rules (DESIGN 53, 59):
 * the attempt counted before the call, a lease, an owner token that fences every later write;
 * the rest stay claimable; a claimed job whose worker never finishes it is claimed again once
 * its lease ends, its attempt counted again. Runs as the settlement login, as deployed.
 */

const TOPIC = 'payments.intake-claim';
let db: TestDatabase;
let merchantId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  merchantId = (await createMerchant(db.pool, `intake-claim-${uniqueSuffix()}`)).id;
});
afterAll(async () => {
  await db.drop();
});

const settlement = () => db.login('settlement');

/** A pending payment as POST /payments writes it (API login), and its created event. */
async function createdEvent(amount: number): Promise<CreatedEvent> {
  const id = uuidv7();
  const createdAt = new Date();
  const body = { amount, currency: 'EUR' as const, source: 'tok_visa' as const, metadata: {} };
  const resource = newPaymentResource(id, body, createdAt);
  const eventId = paymentEventId(id, 'payment.created');
  await insertPaymentOnce(db.login('api'), {
    merchantId,
    idempotencyKey: `key-${uniqueSuffix()}`,
    fingerprint: Buffer.alloc(32),
    ttlSeconds: 3600,
    response: { status: 202, body: JSON.stringify(resource) },
    payment: { ...body, id, description: null, metadata: {}, createdAt },
    event: { id: eventId, type: 'payment.created', topic: TOPIC, data: resource },
  });
  const source = { topic: TOPIC, partition: 0, offset: '7', key: id, value: '{}' };
  return { eventId, paymentId: id, replayToken: null, source };
}

async function jobRow(paymentId: string) {
  const { rows } = await db.pool.query<{
    attempts: number;
    lease_owner: string | null;
    leased: boolean;
  }>(
    `SELECT attempts, lease_owner, coalesce(locked_until > now(), false) AS leased
       FROM settlement_jobs WHERE payment_id = $1`,
    [paymentId],
  );
  return rows[0];
}

describe('settlement intake claiming the jobs it records', () => {
  it('when the worker has one free slot for two new jobs, then the first is claimed with its attempt counted and the second is left to a claim', async () => {
    const events = [await createdEvent(1100), await createdEvent(1200)];
    const [first, second] = events.map((event) => event.paymentId);
    const owner = randomUUID();
    const claim = { slots: 1, owner, leaseMs: 60_000 };

    const { outcomes, claimed } = await recordAndClaimCreatedEvents(settlement(), events, claim);

    expect(outcomes).toEqual(['accepted', 'accepted']);
    expect(claimed).toMatchObject([
      {
        id: first,
        paymentId: first,
        leaseOwner: owner,
        attempts: 1,
        exhausted: false,
        amount: 1100,
        currency: 'EUR',
        source: 'tok_visa',
        eventId: events[0]?.eventId,
        record: events[0]?.source,
      },
    ]);
    expect(await jobRow(first ?? '')).toEqual({ attempts: 1, lease_owner: owner, leased: true });
    expect(await jobRow(second ?? '')).toEqual({ attempts: 0, lease_owner: null, leased: false });
    // A worker's claim takes only the job nobody holds.
    const taken = await claimDueJobs(settlement(), 10, 60_000, 5);
    expect(taken.filter((job) => job.id === first || job.id === second).map((j) => j.id)).toEqual([
      second,
    ]);
  });

  it('when the intake claimed a job and its lease ran out unfinished, then another claim takes it with the attempt counted again, and the first claim can no longer complete it', async () => {
    const event = await createdEvent(1300);
    const stale = { slots: 5, owner: randomUUID(), leaseMs: 1 };
    const { claimed } = await recordAndClaimCreatedEvents(settlement(), [event], stale);
    expect(claimed.map((job) => job.attempts)).toEqual([1]);

    let retaken: Awaited<ReturnType<typeof claimDueJobs>> = [];
    const deadline = Date.now() + 5_000;
    while (retaken.length === 0 && Date.now() < deadline) {
      retaken = (await claimDueJobs(settlement(), 10, 60_000, 5)).filter(
        (job) => job.id === event.paymentId,
      );
    }
    expect(retaken).toMatchObject([{ id: event.paymentId, attempts: 2, exhausted: false }]);

    const late = await completePayments(
      settlement(),
      [{ id: event.paymentId, leaseOwner: stale.owner, final: { status: 'settled' } }],
      TOPIC,
      new Date(),
    );
    expect(late.get(event.paymentId)).toBe('lease_lost');
    const { rows } = await db.pool.query<{ status: string }>(
      'SELECT status FROM payments WHERE id = $1',
      [event.paymentId],
    );
    expect(rows).toEqual([{ status: 'processing' }]);
  });

  it('when the same event is recorded again with a claim, then nothing is claimed and the job keeps its owner', async () => {
    const event = await createdEvent(1400);
    const owner = randomUUID();
    await recordAndClaimCreatedEvents(settlement(), [event], { slots: 1, owner, leaseMs: 60_000 });

    const again = await recordAndClaimCreatedEvents(settlement(), [event], {
      slots: 1,
      owner: randomUUID(),
      leaseMs: 60_000,
    });

    expect(again).toEqual({ outcomes: ['duplicate'], claimed: [] });
    expect(await jobRow(event.paymentId)).toEqual({
      attempts: 1,
      lease_owner: owner,
      leased: true,
    });
  });
});
