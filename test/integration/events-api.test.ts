import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 40 item 7 (DESIGN 129): GET /events lists a merchant's events as their CloudEvents,
 * newest first, filtered and paged like GET /payments; GET /events/{id} answers one. Events are
 * written by the service's own statements (POST /payments, POST refunds); their times are then
 * spread one minute apart (and three tied) so the filters' bounds are exact.
 */

interface CloudEvent {
  id: string;
  type: string;
  time: string;
  subject: string;
}

let db: TestDatabase;
let api: TestApi;
let mine: { id: string; apiKey: string };
let theirs: { id: string; apiKey: string };
/** The merchant's event ids, newest first (the order GET /events must give). */
let expected: { id: string; type: string; time: string }[] = [];
let theirEventId: string;
const BASE = Date.parse('2026-11-20T10:00:00.000Z');

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { EVENT_RETENTION_DAYS: '3650' });
  mine = await api.merchant('Events');
  theirs = await api.merchant('Other');
  for (let i = 0; i < 6; i++) await postPayment(api, { apiKey: mine.apiKey });
  const refunded = await settledPayment(api, db, mine.apiKey);
  expect((await postRefund(api, { apiKey: mine.apiKey, paymentId: refunded })).status).toBe(202);
  const other = await postPayment(api, { apiKey: theirs.apiKey });
  expect(other.status).toBe(202);
  // One minute apart in insertion order; the first three tied (the id breaks the tie).
  await db.pool.query(
    `UPDATE merchant_events e
        SET created_at = $1::timestamptz + make_interval(mins => greatest(o.n, 3))
       FROM (SELECT event_id, row_number() OVER (ORDER BY created_at, event_id)::int AS n
               FROM merchant_events WHERE merchant_id = $2) o
      WHERE e.event_id = o.event_id`,
    [new Date(BASE), mine.id],
  );
  const { rows } = await db.pool.query<{ event_id: string; event_type: string; created_at: Date }>(
    `SELECT event_id, event_type, created_at FROM merchant_events WHERE merchant_id = $1
      ORDER BY created_at DESC, event_id DESC`,
    [mine.id],
  );
  expected = rows.map((r) => ({
    id: r.event_id,
    type: r.event_type,
    time: r.created_at.toISOString(),
  }));
  const theirRow = await db.pool.query<{ event_id: string }>(
    'SELECT event_id FROM merchant_events WHERE merchant_id = $1',
    [theirs.id],
  );
  theirEventId = theirRow.rows[0]?.event_id ?? '';
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

/** Every page of `query` (a cursor added per page), and the ids in the order served. */
async function allPages(query: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor = '';
  for (let page = 0; page < 20; page++) {
    const res = await getJson(api, `/events?limit=${limit}${query}${cursor}`, mine.apiKey);
    expect(res.status, res.text).toBe(200);
    expect(res.json.object).toBe('list');
    const data = res.json.data as CloudEvent[];
    expect(data.length).toBeLessThanOrEqual(limit);
    seen.push(...data.map((e) => e.id));
    if (!res.json.has_more) return seen;
    cursor = `&starting_after=${data[data.length - 1]?.id ?? ''}`;
  }
  throw new Error('more than 20 pages');
}

describe('GET /events', () => {
  it('when listed, then every event of the merchant (created ones too), newest first, none of another merchant', async () => {
    // Six payment.created, the settled payment's created, its refund.created.
    expect(expected).toHaveLength(8);
    expect(new Set(expected.map((e) => e.type))).toEqual(
      new Set(['payment.created', 'refund.created']),
    );
    const res = await getJson(api, '/events?limit=100', mine.apiKey);
    expect(res.status).toBe(200);
    expect(res.json.has_more).toBe(false);
    const data = res.json.data as CloudEvent[];
    expect(data.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    expect(data.map((e) => e.id)).not.toContain(theirEventId);
  });

  it('when paged with starting_after, then each event appears once, in the same order, across pages', async () => {
    expect(await allPages('', 3)).toEqual(expected.map((e) => e.id));
    expect(await allPages('', 1)).toEqual(expected.map((e) => e.id));
  });

  it('when filtered by type, then only that type, paged', async () => {
    const refunds = expected.filter((e) => e.type === 'refund.created').map((e) => e.id);
    expect(await allPages('&type=refund.created', 2)).toEqual(refunds);
    const created = expected.filter((e) => e.type === 'payment.created').map((e) => e.id);
    expect(await allPages('&type=payment.created', 2)).toEqual(created);
    expect(await allPages('&type=payment.settled', 2)).toEqual([]);
  });

  it('when filtered by created[gte] and created[lt], then gte is inclusive and lt exclusive', async () => {
    const from = new Date(BASE + 4 * 60_000).toISOString();
    const to = new Date(BASE + 7 * 60_000).toISOString();
    const inRange = expected.filter((e) => e.time >= from && e.time < to).map((e) => e.id);
    expect(inRange).toHaveLength(3);
    const query = `&created%5Bgte%5D=${from}&created%5Blt%5D=${to}`;
    expect(await allPages(query, 2)).toEqual(inRange);
    // The bounds with an offset name the same instants.
    const offset = `&created[gte]=2026-11-20T11:04:00%2B01:00&created[lt]=${to}`;
    expect(await allPages(offset, 10)).toEqual(inRange);
    // Offsets RFC 3339 allows and Postgres does not, and years beyond its range: read, not 500.
    expect(await allPages('&created[gte]=2332-02-26T23:29:04-17:29', 10)).toEqual([]);
    const all = expected.map((e) => e.id);
    expect(await allPages('&created[gte]=0000-01-01T00:00:00%2B23:59', 10)).toEqual(all);
    expect(await allPages('&created[lt]=9999-12-31T23:59:59-23:59', 10)).toEqual(all);
    const tied = expected.filter((e) => e.time < from).map((e) => e.id);
    expect(await allPages(`&created[lt]=${from}`, 2)).toEqual(tied);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['type=payment.exploded', 'type'],
    ['type=payment.*', 'type'],
    ['created[gte]=yesterday', 'created[gte]'],
    ['created[lt]=2026-11-20T10:00:00Z&created[gte]=2026-11-20T10:00:00Z', 'created[lt]'],
    ['created[gte]=2026-11-20T10:00:00Z&created[gte]=2026-11-21T10:00:00Z', 'created[gte]'],
    ['starting_after=nope', 'starting_after'],
    ['colour=red', 'colour'],
  ])('when the query is %s, then 400 validation_failed naming %s', async (query, path) => {
    const res = await getJson(api, `/events?${query}`, mine.apiKey);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.json.code).toBe('validation_failed');
    expect((res.json.errors as { path: string }[]).map((e) => e.path)).toContain(path);
  });

  it("when starting_after is another merchant's event, then 400, as an unknown id", async () => {
    const res = await getJson(api, `/events?starting_after=${theirEventId}`, mine.apiKey);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: 'starting_after', message: 'no such event' }],
    });
  });
});

describe('GET /events/{id}', () => {
  it('when the event is yours, then its CloudEvent, the very bytes the relay publishes', async () => {
    const newest = expected[0];
    const res = await getJson(api, `/events/${newest?.id ?? ''}`, mine.apiKey);
    expect(res.status).toBe(200);
    const { rows } = await db.pool.query<{
      event_id: string;
      event_type: string;
      aggregate_id: string;
      data: unknown;
      created_at: Date;
      traceparent: string | null;
      tracestate: string | null;
    }>('SELECT * FROM outbox WHERE event_id = $1', [newest?.id]);
    const row = rows[0];
    if (!row) throw new Error('no outbox row');
    // The outbox row keeps its original time; the listed copy's was moved by this test.
    const published = toKafkaRecord({
      eventId: row.event_id,
      eventType: row.event_type,
      aggregateId: row.aggregate_id,
      data: row.data,
      createdAt: new Date(newest?.time ?? ''),
      traceparent: row.traceparent,
      tracestate: row.tracestate,
    }).value;
    expect(res.text).toBe(published);
    expect(res.json).toMatchObject({ specversion: '1.0', id: newest?.id, type: newest?.type });
  });

  it("when the event is another merchant's, unknown or malformed, then 404", async () => {
    for (const id of [theirEventId, crypto.randomUUID(), 'evt_nope']) {
      const res = await getJson(api, `/events/${id}`, mine.apiKey);
      expect(res.status, id).toBe(404);
      expect(res.json.code).toBe('not_found');
    }
    // The other merchant does see its own.
    expect((await getJson(api, `/events/${theirEventId}`, theirs.apiKey)).status).toBe(200);
  });
});
