import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RelayDeps } from '../../src/outbox/relay-context.js';
import { createRelayKafka } from '../../src/outbox/relay-kafka.js';
import { createRelay, type Relay } from '../../src/outbox/relay.js';
import { EVENT_SOURCE } from '../../src/outbox/cloud-event.js';
import { listenForOutbox } from '../../src/outbox/outbox-listener.js';
import { registerBacklogProbe } from '../../src/outbox/outbox-metrics.js';
import { readBacklog } from '../../src/outbox/outbox-repository.js';
import type { Config } from '../../src/platform/config/config.js';
import type { Queryable } from '../../src/platform/database/db.js';
import {
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { startInternalServer } from '../../src/platform/lifecycle/internal-server.js';
import { metricValue } from '../support/metric-value.js';
import {
  countPending,
  expectedRecords,
  insertOutboxEvents,
  readOutboxState,
} from '../support/outbox-builder.js';
import {
  createTestDatabase,
  testConfig,
  uniqueSuffix,
  uniqueTopic,
  type TestDatabase,
} from '../support/isolation.js';
import { REPO_ROOT } from '../support/services.js';
import { readTopic, type TopicMessage } from '../support/topic-reader.js';

let config: Config;
let kafka: KafkaClient;
/** The relays' own client (fails fast); `kafka` reads and administers topics. */
let relayKafka: KafkaClient;
let admin: Admin;
let db: TestDatabase;
let topic: string;
const stoppers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  config = testConfig();
  kafka = createKafka(config, createLogger(config));
  relayKafka = createRelayKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
});
afterAll(async () => {
  await admin.disconnect();
});
// Each test gets a fresh database and topic: its rows and messages are all it sees.
beforeEach(async () => {
  db = await createTestDatabase();
  topic = uniqueTopic('relay');
  await ensureTopics(admin, [topic], 3);
});
afterEach(async () => {
  await Promise.all(stoppers.splice(0).map((stop) => stop()));
  await db.drop();
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
});

function relay(overrides: Partial<RelayDeps> = {}, configOverrides: Partial<Config> = {}): Relay {
  const created = createRelay({
    db: db.login('relay'),
    kafka: relayKafka,
    logger: createLogger(config),
    config: { ...config, ...configOverrides },
    ...overrides,
  });
  stoppers.push(created.stop);
  return created;
}

/** Runs rounds until `done` says so; each round is a real claim-publish-mark. */
async function runRoundsUntil(target: Relay, done: (total: Totals) => boolean): Promise<Totals> {
  const total: Totals = { claimed: 0, published: 0, rejected: 0, parked: 0 };
  await vi.waitFor(
    async () => {
      const result = await target.runOnce();
      total.claimed += result.claimed;
      total.published += result.published;
      total.rejected += result.rejected;
      total.parked += result.parked;
      if (!done(total)) throw new Error(`not yet: ${JSON.stringify(total)}`);
    },
    { timeout: 20_000, interval: 50 },
  );
  return total;
}
interface Totals {
  claimed: number;
  published: number;
  rejected: number;
  parked: number;
}

function byEventId(messages: readonly TopicMessage[]): Map<string, TopicMessage[]> {
  const grouped = new Map<string, TopicMessage[]>();
  for (const message of messages) {
    const id = message.headers.ce_id ?? '';
    grouped.set(id, [...(grouped.get(id) ?? []), message]);
  }
  return grouped;
}

describe('outbox relay (real Postgres, real Kafka)', () => {
  it('when rows are pending, then runOnce publishes each with key = payment id, the CloudEvents value and ce_* headers, and marks it published', async () => {
    const events = await insertOutboxEvents(db.pool, 3, { topic });
    const expected = await expectedRecords(db.pool);

    const result = await relay().runOnce();

    expect(result).toEqual({
      claimed: 3,
      published: 3,
      rejected: 0,
      parked: 0,
      kafkaUnavailable: false,
    });
    const state = await readOutboxState(db.pool);
    for (const event of events) {
      expect(state.get(event.eventId)).toMatchObject({ attempts: 0, lockedUntil: null });
      expect(state.get(event.eventId)?.publishedAt).toBeInstanceOf(Date);
    }
    const messages = await readTopic(kafka, admin, topic);
    expect(messages).toHaveLength(3);
    for (const message of messages) {
      const record = expected.get(message.headers.ce_id ?? '');
      expect(record).toBeDefined();
      expect(message.key).toBe(record?.key);
      expect(message.value).toBe(record?.value);
      expect(message.headers).toEqual(record?.headers);
    }
    const first = events[0];
    const onTopic = messages.find((m) => m.headers.ce_id === first?.eventId);
    expect(JSON.parse(onTopic?.value ?? '{}')).toMatchObject({
      specversion: '1.0',
      id: first?.eventId,
      type: 'payment.created',
      source: EVENT_SOURCE,
      subject: first?.aggregateId,
      datacontenttype: 'application/json',
      data: { id: first?.aggregateId, object: 'payment', status: 'pending' },
    });
    expect(onTopic?.key).toBe(first?.aggregateId);

    expect((await relay().runOnce()).claimed).toBe(0);
    expect(await readTopic(kafka, admin, topic)).toHaveLength(3);
  });

  it('when a payment has several pending events, then a round claims only its oldest, and the topic holds them in creation order', async () => {
    const events = await insertOutboxEvents(db.pool, 6, { topic, payments: 2 });
    const r = relay();

    const claims = [];
    for (let round = 0; round < 4; round++) claims.push((await r.runOnce()).claimed);

    expect(claims).toEqual([2, 2, 2, 0]);
    const messages = await readTopic(kafka, admin, topic);
    for (const paymentId of new Set(events.map((e) => e.aggregateId))) {
      const created = events.filter((e) => e.aggregateId === paymentId).map((e) => e.eventId);
      const published = messages.filter((m) => m.key === paymentId);
      expect(new Set(published.map((m) => m.partition)).size).toBe(1);
      expect(published.map((m) => m.headers.ce_id)).toEqual(created);
    }
  });

  it('when the broker refuses a row, then it counts attempts, holds back only its own payment, and is parked after RELAY_MAX_ATTEMPTS while the payment’s later events go out', async () => {
    const small = uniqueTopic('relay-small');
    await ensureTopics(admin, [small], 3, { 'max.message.bytes': '4096' });
    const poisoned = randomUUID();
    const [poison] = await insertOutboxEvents(db.pool, 1, {
      topic: small,
      paymentIds: [poisoned],
      padding: 10_000,
    });
    const others = await insertOutboxEvents(db.pool, 4, { topic: small });
    const [after] = await insertOutboxEvents(db.pool, 1, {
      topic: small,
      paymentIds: [poisoned],
      startSeq: 1,
    });
    const [parkedBefore, rejectedBefore] = [
      await metricValue('outbox_parked_total'),
      await metricValue('outbox_publish_failures_total', { reason: 'rejected' }),
    ];
    // The first refusal backs off for a second; later ones retry at once.
    const r = relay(
      { retryDelayMs: (attempts) => (attempts === 1 ? 1_000 : 0) },
      {
        RELAY_MAX_ATTEMPTS: 3,
      },
    );

    try {
      const first = await r.runOnce();
      expect(first).toMatchObject({ claimed: 5, published: 4, rejected: 1, parked: 0 });
      let state = await readOutboxState(db.pool);
      const refused = state.get(poison?.eventId ?? '');
      expect(refused).toMatchObject({ attempts: 1, publishedAt: null, parkedAt: null });
      expect(refused?.lastError).toMatch(/larger than the max message size/);
      expect(refused?.lockedUntil?.getTime()).toBeGreaterThan(Date.now());
      // Behind its refused predecessor, the payment's next event waits; nothing else does.
      expect((await r.runOnce()).claimed).toBe(0);
      expect(state.get(after?.eventId ?? '')?.publishedAt).toBeNull();
      for (const other of others) expect(state.get(other.eventId)?.publishedAt).not.toBeNull();

      await runRoundsUntil(r, (total) => total.parked === 1 && total.published === 1);

      state = await readOutboxState(db.pool);
      expect(state.get(poison?.eventId ?? '')).toMatchObject({ attempts: 3, publishedAt: null });
      expect(state.get(poison?.eventId ?? '')?.parkedAt).toBeInstanceOf(Date);
      expect(state.get(after?.eventId ?? '')?.publishedAt).toBeInstanceOf(Date);
      expect(await metricValue('outbox_parked_total')).toBe(parkedBefore + 1);
      expect(await metricValue('outbox_publish_failures_total', { reason: 'rejected' })).toBe(
        rejectedBefore + 3,
      );

      const onTopic = byEventId(await readTopic(kafka, admin, small));
      expect(onTopic.has(poison?.eventId ?? '')).toBe(false);
      const expected = await expectedRecords(db.pool);
      for (const event of [...others, after]) {
        // A refused request may have landed on other partitions: copies are identical.
        const copies = onTopic.get(event?.eventId ?? '') ?? [];
        expect(copies.length).toBeGreaterThanOrEqual(1);
        for (const copy of copies)
          expect(copy.value).toBe(expected.get(copy.headers.ce_id ?? '')?.value);
      }
    } finally {
      await admin.deleteTopics({ topics: [small] }).catch(() => undefined);
    }
  });

  it('when published rows are older than the retention, then purgeOnce deletes them in bounded batches and keeps pending, parked and recent rows', async () => {
    const events = await insertOutboxEvents(db.pool, 10, { topic });
    const ids = events.map((e) => e.id);
    const setState = (rows: string[], assignment: string) =>
      db.pool.query(`UPDATE outbox SET ${assignment} WHERE id = ANY($1::bigint[])`, [rows]);
    await setState(ids.slice(0, 5), `published_at = now() - interval '2 hours'`);
    await setState(ids.slice(5, 6), `published_at = now() - interval '5 minutes'`);
    await setState(ids.slice(6, 8), `parked_at = now() - interval '2 hours', attempts = 5`);
    const r = relay({}, { OUTBOX_RETENTION_SECONDS: 3_600 });

    const deleted = [];
    for (let round = 0; round < 4; round++) deleted.push(await r.purgeOnce(2));

    expect(deleted).toEqual([2, 2, 1, 0]);
    const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM outbox ORDER BY id');
    expect(rows.map((row) => row.id)).toEqual(ids.slice(5));
  });

  it('when a row is inserted, then the running relay publishes it on the NOTIFY wake-up, also after its LISTEN connection was killed', async () => {
    // A poll every 10 minutes: only a notification can explain a prompt publish.
    const r = relay({}, { RELAY_POLL_INTERVAL_MS: 600_000 });
    const applicationName = `relay-listener-${uniqueSuffix()}`;
    let listening = 0;
    const listener = listenForOutbox({
      connectionString: db.roleUrl('relay'),
      logger: createLogger(config),
      onNotify: r.wake,
      onListening: () => listening++,
      applicationName,
    });
    stoppers.push(listener.close);
    void r.run();
    await vi.waitFor(() => {
      expect(listening).toBe(1);
    });

    await insertOutboxEvents(db.pool, 1, { topic });
    await vi.waitFor(
      async () => {
        expect(await countPending(db.pool)).toBe(0);
      },
      { timeout: 10_000 },
    );

    // As the relay's login: only a member of a backend's role may terminate it.
    const { rowCount } = await db.login('relay').query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = $1 AND datname = current_database()`,
      [applicationName],
    );
    expect(rowCount).toBe(1);
    await vi.waitFor(() => {
      expect(listening).toBe(2);
    });
    await insertOutboxEvents(db.pool, 1, { topic });
    await vi.waitFor(
      async () => {
        expect(await countPending(db.pool)).toBe(0);
      },
      { timeout: 10_000 },
    );
    expect(await readTopic(kafka, admin, topic)).toHaveLength(2);
  });

  it('when idle, then the loop waits for the poll instead of spinning', async () => {
    let claims = 0;
    const counting: Queryable = {
      // The claim is a named statement: its text comes inside the query config.
      query: ((query: string | { text: string }, values?: unknown[]) => {
        const text = typeof query === 'string' ? query : query.text;
        if (text.includes('FOR UPDATE SKIP LOCKED') && text.includes('locked_until = now()')) {
          claims++;
        }
        return db.pool.query(query, values);
      }) as Queryable['query'],
    };
    const r = relay({ db: counting }, { RELAY_POLL_INTERVAL_MS: 200 });
    void r.run();
    await vi.waitFor(() => {
      expect(claims).toBeGreaterThan(0);
    });

    // Measuring, not synchronising: one second of idling at a 200 ms poll.
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect(claims).toBeLessThanOrEqual(8);
  });

  it('when a relay is killed after the broker acked and before it marked, then another relay republishes the rows with the same event ids and marks them', async () => {
    const events = await insertOutboxEvents(db.pool, 3, { topic });
    const dist = (file: string) => pathToFileURL(path.join(REPO_ROOT, 'dist', file)).href;
    // A real process dies between send and mark: SIGKILL from inside the afterPublish hook.
    const script = `
      const { createRelay } = await import(${JSON.stringify(dist('outbox/relay.js'))});
      const { createRelayKafka } = await import(${JSON.stringify(dist('outbox/relay-kafka.js'))});
      const { loadConfig } = await import(${JSON.stringify(dist('platform/config/config.js'))});
      const { createPool } = await import(${JSON.stringify(dist('platform/database/db.js'))});
      const { createLogger } = await import(${JSON.stringify(dist('platform/telemetry/logger.js'))});
      const config = loadConfig();
      const logger = createLogger(config);
      const relay = createRelay({
        db: createPool(config, logger), kafka: createRelayKafka(config, logger), logger, config,
        // A 1 s lease (so the test waits little for it): send only in its first 900 ms.
        leaseMarginMs: 100,
        afterPublish: () => { process.kill(process.pid, 'SIGKILL'); return new Promise(() => {}); },
      });
      await relay.runOnce();
      process.stderr.write('survived the kill\\n');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: db.roleUrl('relay'),
        KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
        RELAY_LEASE_MS: '1000',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const signal = await new Promise((resolve) =>
      child.on('exit', (_code, sig) => {
        resolve(sig);
      }),
    );
    expect(signal, stderr).toBe('SIGKILL');

    let state = await readOutboxState(db.pool);
    for (const event of events) {
      expect(state.get(event.eventId)?.publishedAt).toBeNull();
      expect(state.get(event.eventId)?.lockedUntil).toBeInstanceOf(Date);
    }
    expect(await readTopic(kafka, admin, topic)).toHaveLength(3);

    // Once the dead relay's lease ends, another one takes the rows over.
    await runRoundsUntil(relay(), (total) => total.published === 3);

    state = await readOutboxState(db.pool);
    for (const event of events) expect(state.get(event.eventId)?.publishedAt).toBeInstanceOf(Date);
    const copies = byEventId(await readTopic(kafka, admin, topic));
    expect([...copies.keys()].sort()).toEqual(events.map((e) => e.eventId).sort());
    for (const [, [original, republished, ...more]] of copies) {
      expect(more).toEqual([]);
      expect(republished?.value).toBe(original?.value);
      expect(republished?.key).toBe(original?.key);
      expect(republished?.partition).toBe(original?.partition);
      expect(republished?.offset).toBeGreaterThan(original?.offset ?? Infinity);
    }
  });

  it('when rows wait and get published, then /metrics reports backlog, oldest pending age, lag and the published counter', async () => {
    const unregister = registerBacklogProbe(() => readBacklog(db.login('relay')));
    const server = await startInternalServer(
      {
        host: '127.0.0.1',
        port: 0,
        readiness: () => Promise.resolve({ status: 'ready', checks: [] }),
      },
      createLogger(config),
    );
    stoppers.push(async () => {
      unregister();
      await server.close();
    });
    const scrape = async () => {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    };
    await insertOutboxEvents(db.pool, 5, { topic });
    await db.pool.query(`UPDATE outbox SET created_at = now() - interval '30 seconds'`);
    const [publishedBefore, lagBefore] = [
      await metricValue('outbox_published_total'),
      await metricValue('outbox_publish_lag_seconds'),
    ];

    const waiting = await scrape();
    expect(waiting).toMatch(/^outbox_backlog_rows 5$/m);
    const age = Number(/^outbox_oldest_pending_age_seconds (\S+)$/m.exec(waiting)?.[1]);
    expect(age).toBeGreaterThanOrEqual(30);
    expect(age).toBeLessThan(60);

    await relay().runOnce();

    const after = await scrape();
    expect(after).toMatch(/^outbox_backlog_rows 0$/m);
    expect(after).toMatch(/^outbox_oldest_pending_age_seconds 0$/m);
    expect(await metricValue('outbox_published_total')).toBe(publishedBefore + 5);
    expect(await metricValue('outbox_publish_lag_seconds')).toBe(lagBefore + 5);
    expect(after).toMatch(/^outbox_publish_lag_seconds_bucket\{le="60"\} \d+$/m);
    expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
  });
});
