import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTBOX_CHANNEL } from '../../src/outbox/outbox-listener.js';
import { requestWakeups } from '../../src/outbox/outbox-wakeups.js';
import { createTestDatabase, uniqueTopic, type TestDatabase } from '../support/isolation.js';
import { insertOutboxEvents } from '../support/outbox-builder.js';

/** The outbox trigger notifies only while a relay asked for it (migration 0016, DESIGN 41). */
let db: TestDatabase;
let listener: pg.Client;
const received: number[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  listener = new pg.Client({ connectionString: db.roleUrl('relay') });
  await listener.connect();
  listener.on('notification', () => received.push(Date.now()));
  await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
});

afterAll(async () => {
  await listener.end();
  await db.drop();
});

/** Inserts one outbox row, then a marker notification: once the marker is in, so is any other. */
async function insertAndCount(): Promise<number> {
  const before = received.length;
  await insertOutboxEvents(db.pool, 1, { topic: uniqueTopic() });
  const marker = new Promise<void>((resolve) => {
    const onMessage = (message: pg.Notification) => {
      if (message.payload !== 'marker') return;
      listener.off('notification', onMessage);
      resolve();
    };
    listener.on('notification', onMessage);
  });
  await db.pool.query(`SELECT pg_notify($1, 'marker')`, [OUTBOX_CHANNEL]);
  await marker;
  return received.length - before - 1;
}

describe('outbox wake-ups', () => {
  it('when no relay asked, then an insert commits without NOTIFY; once one asks, inserts notify until the window ends', async () => {
    expect(await insertAndCount()).toBe(0);

    await requestWakeups(db.login('relay'), 60_000);
    expect(await insertAndCount()).toBe(1);
    expect(await insertAndCount()).toBe(1);

    // A shorter request never shortens the window another relay asked for.
    await requestWakeups(db.login('relay'), 1);
    expect(await insertAndCount()).toBe(1);

    await db.pool.query(`UPDATE outbox_wakeups SET wanted_until = now() - interval '1 second'`);
    expect(await insertAndCount()).toBe(0);
  });
});
