import net from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startApi } from '../../src/apps/api/start-api.js';
import { createPlatform } from '../../src/platform/lifecycle/platform.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { countWrites, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

/** The request deadline, slow clients, and how many log lines an outage costs. */
let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let slowWrites = false;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(
    db,
    {
      REQUEST_DEADLINE_MS: '2500',
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '1500',
    },
    {
      beforeWrite: async () => {
        if (slowWrites) await new Promise((r) => setTimeout(r, 3_500));
      },
    },
  );
  ({ apiKey } = await api.merchant());
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

/** Sends `head` then `trickle` one byte every `everyMs`; resolves with what came back and when. */
function trickle(
  port: number,
  head: string,
  trickleBytes: string,
  everyMs: number,
): Promise<{ received: string; afterMs: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let i = 0;
    const timer = setInterval(() => {
      if (i < trickleBytes.length && !socket.destroyed) socket.write(trickleBytes[i++] ?? '');
    }, everyMs);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ received, afterMs: performance.now() - started });
    });
  });
}

describe('http bounds', () => {
  it('when a body arrives one byte every 400 ms, then the request is cut off (408) within the request timeout, and nothing is written', async () => {
    const before = await countWrites(db);
    const body = JSON.stringify({ amount: 1000, currency: 'EUR' });
    const head =
      `POST /payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n` +
      `Idempotency-Key: slow-body\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n`;
    const { received, afterMs } = await trickle(api.api.port, head, body, 400);
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    // 1.5 s request timeout, checked every second by Node: well under the body's 11 s.
    expect(afterMs).toBeLessThan(4_000);
    expect(await countWrites(db)).toEqual(before);
  });

  it('when headers arrive one byte every 300 ms, then the connection is cut off within the headers timeout', async () => {
    const { received, afterMs } = await trickle(
      api.api.port,
      'GET /healthz HTTP/1.1\r\n',
      'Host: example.com\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa\r\n\r\n',
      300,
    );
    expect(received).not.toMatch(/200 OK/);
    expect(afterMs).toBeLessThan(4_000);
  });

  it('when a payment takes longer than the deadline, then 503 + Retry-After at the deadline, and the retry with the same key gets the payment written once', async () => {
    const body = { amount: 777, currency: 'EUR' };
    slowWrites = true;
    let first;
    const started = performance.now();
    try {
      first = await postPayment(api, { apiKey, key: 'past-deadline', body });
    } finally {
      slowWrites = false;
    }
    const tookMs = performance.now() - started;
    expect(first.status).toBe(503);
    expect(first.json.code).toBe('service_unavailable');
    expect(first.headers.get('retry-after')).toBe('2');
    expect(tookMs).toBeGreaterThanOrEqual(2_400);
    expect(tookMs).toBeLessThan(3_400);

    // The write goes on behind the 503; once it committed, the retry replays it.
    await new Promise((r) => setTimeout(r, 1_500));
    const retry = await postPayment(api, { apiKey, key: 'past-deadline', body });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const { rows } = await db.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM payments WHERE amount = 777',
    );
    expect(Number(rows[0]?.n)).toBe(1);
  });
});

describe('outage logging', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    const url = new URL(inject('services').redisUrl);
    proxy = await startTcpProxy(url.hostname, Number(url.port || 6379));
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('when Redis is down for 3 s under 40 requests/s, then the outage costs a few warnings (no stacks, no errors) and one line when it ends', async () => {
    const lines: { level: number; msg: string; err?: unknown }[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
        done();
      },
    });
    const url = new URL(inject('services').redisUrl);
    url.port = String(proxy.port);
    const config = testConfig({
      DATABASE_URL: db.roleUrl('api'),
      REDIS_URL: url.toString(),
      OUTAGE_LOG_INTERVAL_MS: '1000',
    });
    const logger = pino({ level: 'info' }, stream);
    const platform = await createPlatform(config, logger);
    const role = await startApi(platform);
    const local = { ...api, url: (path: string) => `http://127.0.0.1:${role.port}${path}` };
    try {
      const send = async (n: number, prefix: string) => {
        for (let i = 0; i < n; i++) {
          const res = await postPayment(local, { apiKey, key: `${prefix}-${i}` });
          expect(res.status).toBe(202);
          await new Promise((r) => setTimeout(r, 25));
        }
      };
      await send(10, 'before');
      await proxy.stop();
      const outageStarted = performance.now();
      while (performance.now() - outageStarted < 3_000) await send(10, `down-${lines.length}`);
      await proxy.start();
      // Reconnect (ioredis backs off up to 2 s), then the breaker's probe succeeds.
      await new Promise((r) => setTimeout(r, 2_500));
      await send(10, 'after');
    } finally {
      await role.close();
      await platform.close();
    }
    const warnings = lines.filter((l) => l.level >= 40);
    expect(warnings.filter((l) => l.level >= 50)).toEqual([]);
    const withStacks = warnings.filter(
      (l) => l.err !== undefined && l.msg !== 'redis connection error',
    );
    expect(withStacks.map((l) => ({ msg: l.msg, err: l.err }))).toEqual([]);
    // 1 start + ~1 per second of outage + ioredis' connection line, whatever the request count.
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(8);
    expect(lines.filter((l) => l.msg === 'redis available again')).toHaveLength(1);
  });
});
