import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyEvent,
  ensureInboxSchema,
  inboxTables,
  type ApplyOptions,
  type CloudEvent,
  type EventHandler,
} from '../../src/consumer-kit/consumer-kit.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

// The kit's transaction on its own (no Kafka): concurrent copies of one event, and a handler
// that outlives the timeout.

let db: TestDatabase;
let consumerPool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
  consumerPool = new pg.Pool({ connectionString: db.url, max: 6 });
  consumerPool.on('error', () => undefined);
  await ensureInboxSchema(consumerPool);
  await consumerPool.query(
    'CREATE TABLE effects (event_id text PRIMARY KEY, applications integer NOT NULL)',
  );
});
afterAll(async () => {
  await consumerPool.end();
  await db.drop();
});

const countEffect: EventHandler = async (event, { client }) => {
  await client.query(
    `INSERT INTO effects VALUES ($1, 1)
     ON CONFLICT (event_id) DO UPDATE SET applications = effects.applications + 1`,
    [event.id],
  );
};

function options(handler: EventHandler, timeoutMs = 10_000): ApplyOptions {
  return { pool: consumerPool, tables: inboxTables(), handler, policy: 'park', timeoutMs };
}

function paymentCreated(): CloudEvent {
  const paymentId = randomUUID();
  return {
    specversion: '1.0',
    id: randomUUID(),
    type: 'payment.created',
    source: '/payments-service',
    subject: paymentId,
    time: new Date().toISOString(),
    data: { id: paymentId },
  };
}

async function effectsOf(eventId: string) {
  const { rows } = await db.pool.query<{ applications: number }>(
    'SELECT applications FROM effects WHERE event_id = $1',
    [eventId],
  );
  return rows;
}

describe('consumer kit: the transaction', () => {
  it('when five copies of one event are applied at once, then one is applied and four are duplicates', async () => {
    const event = paymentCreated();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => applyEvent(options(countEffect), event, null)),
    );
    expect(results.map((result) => result.outcome).sort()).toEqual([
      'applied',
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
    ]);
    expect(await effectsOf(event.id)).toEqual([{ applications: 1 }]);
  });

  it('when the handler outlives the timeout, then nothing of the event is committed and the next try applies it once', async () => {
    const event = paymentCreated();
    const hanging: EventHandler = async (hung, context) => {
      await countEffect(hung, context);
      await context.client.query('SELECT pg_sleep(30)');
    };
    const started = Date.now();
    await expect(applyEvent(options(hanging, 500), event, null)).rejects.toThrow(
      /statement timeout|took longer than 500 ms/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    const inbox = await db.pool.query('SELECT 1 FROM consumer_inbox WHERE event_id = $1', [
      event.id,
    ]);
    expect(inbox.rows).toEqual([]);
    expect(await effectsOf(event.id)).toEqual([]);

    await expect(applyEvent(options(countEffect), event, null)).resolves.toMatchObject({
      outcome: 'applied',
    });
    expect(await effectsOf(event.id)).toEqual([{ applications: 1 }]);
  });

  it("when an older kit's inbox table is ensured again, then it gains the gap columns and the skipped status, once", async () => {
    // The inbox table as the kit created it before gaps were reported.
    await db.pool.query(`CREATE TABLE old_inbox (
      event_id text PRIMARY KEY, event_type text NOT NULL, subject text NOT NULL,
      status text NOT NULL CHECK (status IN ('applied', 'parked', 'refused')),
      order_problem text, event jsonb, topic text, kafka_partition integer, kafka_offset bigint,
      received_at timestamptz NOT NULL DEFAULT now(), applied_at timestamptz)`);
    await ensureInboxSchema(consumerPool, 'old_inbox');
    await ensureInboxSchema(consumerPool, 'old_inbox');
    const insert = (status: string) =>
      db.pool.query(
        `INSERT INTO old_inbox (event_id, event_type, subject, status, gap_decision)
         VALUES ($1, 'payment.settled', 'p', $2, 'skip')`,
        [randomUUID(), status],
      );
    await expect(insert('skipped')).resolves.toMatchObject({ rowCount: 1 });
    await expect(insert('lost')).rejects.toThrow(/old_inbox_status_check/);
    const checks = await db.pool.query(
      `SELECT conname FROM pg_constraint WHERE conrelid = 'old_inbox'::regclass AND contype = 'c'`,
    );
    expect(checks.rows).toEqual([{ conname: 'old_inbox_status_check' }]);
  });
});
