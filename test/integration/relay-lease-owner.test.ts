import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  claimEvents,
  markPublished,
  recordFailedAttempt,
  releaseEvents,
  type Claim,
} from '../../src/outbox/outbox-repository.js';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import { createRelay } from '../../src/outbox/relay.js';
import { createKafka, ensureTopics, type Admin } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { insertOutboxEvents } from '../support/outbox-builder.js';
import {
  createTestDatabase,
  testConfig,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';

/** Relay A's lease: short (the smallest RELAY_LEASE_MS allows), so it runs out within the test. */
const SHORT_LEASE_MS = 100;
/** Relay B's lease: outlives the test. */
const LONG_LEASE_MS = 60_000;
/** A running relay A's lease, and its margin: it sends only in the first 900 ms of its lease. */
const RUNNING_LEASE_MS = 1_000;
const RUNNING_MARGIN_MS = 100;

let db: TestDatabase;
const topic = uniqueTopic('relay-owner');

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE outbox');
});

interface RowState {
  published: boolean;
  parked: boolean;
  attempts: number;
  leasedFor: 'future' | 'past' | 'none';
  owner: string | null;
}

async function rowState(id: string): Promise<RowState> {
  const { rows } = await db.pool.query<{
    published: boolean;
    parked: boolean;
    attempts: number;
    leased_for: RowState['leasedFor'];
    owner: string | null;
  }>(
    `SELECT published_at IS NOT NULL AS published, parked_at IS NOT NULL AS parked, attempts,
            CASE WHEN locked_until IS NULL THEN 'none'
                 WHEN locked_until > now() THEN 'future' ELSE 'past' END AS leased_for,
            lease_owner::text AS owner
       FROM outbox WHERE id = $1`,
    [id],
  );
  const row = rows[0];
  if (!row) throw new Error(`no outbox row ${id}`);
  return {
    published: row.published,
    parked: row.parked,
    attempts: row.attempts,
    leasedFor: row.leased_for,
    owner: row.owner,
  };
}

/** Resolves once the row's lease has run out by Postgres's clock. */
async function leaseEnded(id: string): Promise<void> {
  await vi.waitFor(
    async () => {
      if ((await rowState(id)).leasedFor !== 'past') throw new Error('still leased');
    },
    { timeout: 10_000, interval: 50 },
  );
}

/** Relay A claims the one row, its lease runs out, relay B claims the same row. */
async function claimTakenOver(): Promise<{ a: Claim; b: Claim; id: string }> {
  await insertOutboxEvents(db.pool, 1, { topic });
  const a = await claimEvents(db.login('relay'), 10, SHORT_LEASE_MS);
  const [row] = a.events;
  if (!row) throw new Error('relay A claimed nothing');
  await new Promise((resolve) => setTimeout(resolve, SHORT_LEASE_MS * 3));
  const b = await claimEvents(db.login('relay'), 10, LONG_LEASE_MS);
  expect(b.events.map((event) => event.id)).toEqual([row.id]);
  expect(b.owner).not.toBe(a.owner);
  return { a, b, id: row.id };
}

/** B still holds the row: pending, leased into the future under B's token, untouched. */
function heldByB(b: Claim): RowState {
  return { published: false, parked: false, attempts: 0, leasedFor: 'future', owner: b.owner };
}

describe('lease owner token', () => {
  it('when relay A marks a row whose lease relay B took over, then 0 rows change and B marks it', async () => {
    const { a, b, id } = await claimTakenOver();

    expect(await markPublished(db.login('relay'), a.owner, [id])).toBe(0);
    expect(await rowState(id)).toEqual(heldByB(b));

    expect(await markPublished(db.login('relay'), b.owner, [id])).toBe(1);
    expect(await rowState(id)).toMatchObject({ published: true, leasedFor: 'none', owner: null });
  });

  it('when relay A releases a row whose lease relay B took over, then B keeps its lease and no one else can claim the row', async () => {
    const { a, b, id } = await claimTakenOver();

    expect(await releaseEvents(db.login('relay'), a.owner, [id], 'kafka unavailable: test')).toBe(
      0,
    );
    expect(await rowState(id)).toEqual(heldByB(b));
    expect((await claimEvents(db.login('relay'), 10, LONG_LEASE_MS)).events).toEqual([]);

    expect(await releaseEvents(db.login('relay'), b.owner, [id], 'kafka unavailable: test')).toBe(
      1,
    );
    expect(await rowState(id)).toMatchObject({ published: false, leasedFor: 'none', owner: null });
  });

  it('when relay A counts a failed attempt (or parks) a row whose lease relay B took over, then nothing is counted and B publishes it', async () => {
    const { a, b, id } = await claimTakenOver();

    // maxAttempts 1: without the owner check this would park the row under B's feet.
    expect(await recordFailedAttempt(db.login('relay'), a.owner, id, 'refused', 1, 1_000)).toEqual({
      counted: false,
      parked: false,
    });
    expect(await rowState(id)).toEqual(heldByB(b));

    expect(await markPublished(db.login('relay'), b.owner, [id])).toBe(1);
    expect(await rowState(id)).toMatchObject({ published: true, parked: false, attempts: 0 });
  });

  it('when the owner counts a failed attempt, then it is counted, and parking clears the owner', async () => {
    await insertOutboxEvents(db.pool, 1, { topic });
    const claim = await claimEvents(db.login('relay'), 10, LONG_LEASE_MS);
    const id = claim.events[0]?.id ?? '';

    expect(
      await recordFailedAttempt(db.login('relay'), claim.owner, id, 'refused', 2, 1_000),
    ).toEqual({
      counted: true,
      parked: false,
    });
    expect(await rowState(id)).toMatchObject({
      attempts: 1,
      leasedFor: 'future',
      owner: claim.owner,
    });
    expect(
      await recordFailedAttempt(db.login('relay'), claim.owner, id, 'refused', 2, 1_000),
    ).toEqual({
      counted: true,
      parked: true,
    });
    expect(await rowState(id)).toMatchObject({
      attempts: 2,
      parked: true,
      leasedFor: 'none',
      owner: null,
    });
  });
});

describe('lease owner token in a running relay', () => {
  let admin: Admin;
  const relayTopic = uniqueTopic('relay-owner-run');

  beforeAll(async () => {
    const config = testConfig();
    admin = createKafka(config, createLogger(config)).admin();
    await admin.connect();
    await ensureTopics(admin, [relayTopic], 1);
  });
  afterAll(async () => {
    await admin.deleteTopics({ topics: [relayTopic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it("when relay A's lease runs out between the ack and the mark and relay B claims the row, then A's round marks nothing and the row stays B's", async () => {
    const [event] = await insertOutboxEvents(db.pool, 1, { topic: relayTopic });
    const id = event?.id ?? '';
    // Long enough that A's send starts within its lease minus the margin, even on a busy machine.
    const config = testConfig({
      DATABASE_URL: db.roleUrl('relay'),
      KAFKA_TOPIC_PAYMENTS: relayTopic,
      RELAY_LEASE_MS: String(RUNNING_LEASE_MS),
    });
    const logger = createLogger(config);
    let b: Claim | undefined;
    const relayA = createRelay({
      db: db.login('relay'),
      kafka: createRelayKafka(config, logger),
      logger,
      config,
      leaseMarginMs: RUNNING_MARGIN_MS,
      afterPublish: async () => {
        // Acked by Kafka; A's lease runs out and B claims the row before A marks it.
        await leaseEnded(id);
        b = await claimEvents(db.login('relay'), 10, LONG_LEASE_MS);
      },
    });
    try {
      const result = await relayA.runOnce();
      expect(result).toMatchObject({ claimed: 1, published: 1 });
    } finally {
      await relayA.stop();
    }
    if (!b) throw new Error('relay B never claimed');
    expect(b.events.map((claimed) => claimed.id)).toEqual([id]);
    expect(await rowState(id)).toEqual(heldByB(b));

    expect(await markPublished(db.login('relay'), b.owner, [id])).toBe(1);
    expect(await rowState(id)).toMatchObject({ published: true });
  });
});
