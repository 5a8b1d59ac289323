import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import {
  countWrites,
  getJson,
  postPayment,
  send,
  startTestApi,
  type Answer,
  type PostOptions,
  type TestApi,
} from '../support/test-api.js';

/** Every row of the brief's error table: status, code, problem+json, and nothing written (I5). */

let db: TestDatabase;
let api: TestApi;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  ({ apiKey } = await api.merchant());
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

function expectProblem(res: Answer, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  expect(res.json).toMatchObject({ status, code, type: expect.any(String) as unknown });
  expect(typeof res.json.title).toBe('string');
  expect(typeof res.json.detail).toBe('string');
}

/** Sends a request expected to be rejected and asserts that it wrote nothing anywhere. */
async function rejected(options: Omit<PostOptions, 'apiKey'> & { apiKey?: string }) {
  const before = await countWrites(db);
  const cachedBefore = await idempotencyKeysInRedis();
  const res = await postPayment(api, { apiKey, ...options });
  expect(await countWrites(db)).toEqual(before);
  expect((await idempotencyKeysInRedis()).sort()).toEqual(cachedBefore.sort());
  return res;
}

/** Every key this API wrote to Redis except its rate-limit buckets (spent by every request). */
async function idempotencyKeysInRedis(): Promise<string[]> {
  const prefix = api.platform.config.REDIS_KEY_PREFIX;
  const keys = await api.platform.redis.keys(`${prefix}*`);
  return keys.filter((key) => !key.startsWith(`${prefix}rl:`));
}

const valid = { amount: 1000, currency: 'EUR' };

describe('400', () => {
  it('when Idempotency-Key is missing, then idempotency_key_missing', async () => {
    expectProblem(await rejected({ key: null, body: valid }), 400, 'idempotency_key_missing');
  });

  it.each([['x'.repeat(256)], ['has space'], ['"unterminated']])(
    'when Idempotency-Key is %j, then idempotency_key_invalid',
    async (key) => {
      expectProblem(await rejected({ key, body: valid }), 400, 'idempotency_key_invalid');
    },
  );

  it.each([['{"amount": 1000,'], ['not json'], ['']])(
    'when the body is %j, then malformed_json',
    async (rawBody) => {
      expectProblem(await rejected({ rawBody }), 400, 'malformed_json');
    },
  );

  it.each([
    ['{"amount":100,"amount":100000,"currency":"EUR"}', 'amount'],
    ['{"amount":1000,"currency":"EUR","metadata":{"order":"1","\\u006frder":"2"}}', 'order'],
  ])(
    'when the body %j has a member name twice, then malformed_json naming it',
    async (rawBody, name) => {
      const res = await rejected({ rawBody });
      expectProblem(res, 400, 'malformed_json');
      expect(res.json.detail).toContain(`"${name}"`);
    },
  );

  it.each([
    [{ amount: 0, currency: 'EUR' }, 'amount'],
    [{ amount: 100000000, currency: 'EUR' }, 'amount'],
    [{ amount: 10.5, currency: 'EUR' }, 'amount'],
    [{ amount: '1000', currency: 'EUR' }, 'amount'],
    [{ currency: 'EUR' }, 'amount'],
    [{ amount: 1000, currency: 'eur' }, 'currency'],
    [{ amount: 1000, currency: 'XXX' }, 'currency'],
    [{ amount: 1000, currency: 'EUR', source: 'tok_stolen' }, 'source'],
    [{ amount: 1000, currency: 'EUR', description: 'x'.repeat(501) }, 'description'],
    [{ amount: 1000, currency: 'EUR', customer: 'cus_1' }, 'customer'],
    [
      { amount: 1000, currency: 'EUR', metadata: { ['k'.repeat(41)]: 'v' } },
      `metadata.${'k'.repeat(41)}`,
    ],
    [{ amount: 1000, currency: 'EUR', metadata: { a: 1 } }, 'metadata.a'],
    [{ amount: 1000, currency: 'EUR', metadata: { a: 'x'.repeat(501) } }, 'metadata.a'],
    [
      {
        amount: 1000,
        currency: 'EUR',
        metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])),
      },
      'metadata',
    ],
    [[1, 2], '(body)'],
    [42, '(body)'],
  ])('when the body is %j, then validation_failed names %s', async (body, path) => {
    const res = await rejected({ body });
    expectProblem(res, 400, 'validation_failed');
    const errors = res.json.errors as { path: string; message: string }[];
    expect(errors.map((e) => e.path)).toContain(path);
    expect(errors.every((e) => e.message.length > 0)).toBe(true);
  });

  // Raw JSON text: \u0000 and a lone \ud800 are valid JSON escapes that Postgres cannot store.
  it.each([
    [
      'a NUL in description',
      '{"amount":1000,"currency":"EUR","description":"a\\u0000b"}',
      'description',
    ],
    [
      'a lone surrogate in description',
      '{"amount":1000,"currency":"EUR","description":"a\\ud800"}',
      'description',
    ],
    [
      'a low surrogate first',
      '{"amount":1000,"currency":"EUR","description":"\\udc00\\ud800"}',
      'description',
    ],
    [
      'a NUL in a metadata value',
      '{"amount":1000,"currency":"EUR","metadata":{"k":"\\u0000"}}',
      'metadata.k',
    ],
    [
      'a NUL in a metadata key',
      '{"amount":1000,"currency":"EUR","metadata":{"k\\u0000":"v"}}',
      'metadata.k\u0000',
    ],
    [
      'a lone surrogate in a metadata key',
      '{"amount":1000,"currency":"EUR","metadata":{"\\ud800":"v"}}',
      'metadata.\ud800',
    ],
    [
      'a __proto__ metadata key',
      '{"amount":1000,"currency":"EUR","metadata":{"__proto__":"v"}}',
      'metadata.__proto__',
    ],
  ])('when the body has %s, then validation_failed names it', async (_case, rawBody, path) => {
    const res = await rejected({ rawBody });
    expectProblem(res, 400, 'validation_failed');
    const errors = res.json.errors as { path: string; message: string }[];
    expect(errors.map((e) => e.path)).toContain(path);
  });

  it.each([
    ['a lone continuation byte', [0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['an overlong encoding', [0xc0, 0xaf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
  ])('when the description holds %s (not UTF-8), then invalid_encoding', async (_case, bytes) => {
    const rawBody = Buffer.concat([
      Buffer.from('{"amount":1000,"currency":"EUR","description":"'),
      Buffer.from(bytes),
      Buffer.from('"}'),
    ]);
    expectProblem(await rejected({ rawBody }), 400, 'invalid_encoding');
  });

  it('when the body cannot be decoded (bad gzip), then malformed_body, not malformed_json', async () => {
    const res = await rejected({
      rawBody: JSON.stringify(valid),
      headers: { 'content-encoding': 'gzip' },
    });
    expectProblem(res, 400, 'malformed_body');
  });
});

describe('metadata and auth edge cases that are accepted', () => {
  it('when metadata keys are constructor and prototype, then they are stored faithfully', async () => {
    const metadata = { constructor: 'c', prototype: 'p', toString: 't' };
    const res = await postPayment(api, { apiKey, body: { ...valid, metadata } });
    expect(res.status).toBe(202);
    expect(res.json.metadata).toEqual(metadata);
    const read = await getJson(api, `/payments/${res.json.id as string}`, apiKey);
    expect(read.json.metadata).toEqual(metadata);
  });

  it('when a retry adds metadata: {}, then it is the same request (replayed, one payment)', async () => {
    const key = crypto.randomUUID();
    const first = await postPayment(api, { apiKey, key, body: valid });
    expect(first.json.metadata).toEqual({});
    const before = await countWrites(db);
    const retry = await postPayment(api, { apiKey, key, body: { ...valid, metadata: {} } });
    expect(retry.status).toBe(first.status);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.json.id).toBe(first.json.id);
    expect(await countWrites(db)).toEqual(before);
  });

  it('when an emoji description is 500 characters (1000 UTF-16 units), then it is accepted', async () => {
    const description = '\u{1F600}'.repeat(500);
    const res = await postPayment(api, { apiKey, body: { ...valid, description } });
    expect(res.status).toBe(202);
    expect(res.json.description).toBe(description);
  });

  it.each([['bearer '], ['BEARER '], ['Bearer  ']])(
    'when the Authorization header starts %j, then the key is accepted',
    async (prefix) => {
      const res = await postPayment(api, {
        apiKey,
        headers: { authorization: `${prefix}${apiKey}` },
        body: valid,
      });
      expect(res.status).toBe(202);
    },
  );
});

describe('401', () => {
  it.each([
    ['no Authorization header', undefined],
    ['an unknown key', 'Bearer sk_not_a_real_key'],
    ['another scheme', `Basic dXNlcjpwYXNz`],
  ])('when the request has %s, then unauthorized', async (_case, authorization) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': 'k',
    };
    if (authorization) headers.authorization = authorization;
    const before = await countWrites(db);
    const res = await fetch(api.url('/payments'), {
      method: 'POST',
      headers,
      body: JSON.stringify(valid),
    });
    const answer = {
      status: res.status,
      headers: res.headers,
      text: '',
      json: (await res.json()) as Record<string, unknown>,
    };
    expectProblem(answer, 401, 'unauthorized');
    expect(await countWrites(db)).toEqual(before);
  });
});

describe('404', () => {
  it.each([
    ['an unknown id', '/payments/0190a6e2-7f6a-7d3c-8a4b-123456789abc'],
    ['a malformed id', '/payments/not-a-uuid'],
    ['an id with SQL in it', "/payments/1'%20OR%20'1'='1"],
    ['a badly percent-encoded id', '/payments/%ZZ'],
    ['a truncated percent escape', '/payments/abc%E2%82'],
  ])('when GET asks for %s, then not_found', async (_case, path) => {
    expectProblem(await getJson(api, path, apiKey), 404, 'not_found');
  });

  it("when GET asks for another merchant's payment, then not_found", async () => {
    const other = await api.merchant('Other');
    const theirs = await postPayment(api, { apiKey: other.apiKey, body: valid });
    expectProblem(
      await getJson(api, `/payments/${theirs.json.id as string}`, apiKey),
      404,
      'not_found',
    );
  });
});

describe('405', () => {
  it.each([
    ['PUT', '/payments', 'GET, HEAD, POST'],
    ['DELETE', '/payments', 'GET, HEAD, POST'],
    ['PATCH', '/payments', 'GET, HEAD, POST'],
    ['PUT', '/payments/0190a6e2-7f6a-7d3c-8a4b-123456789abc', 'GET, HEAD'],
    ['DELETE', '/payments/0190a6e2-7f6a-7d3c-8a4b-123456789abc', 'GET, HEAD'],
    ['POST', '/payments/0190a6e2-7f6a-7d3c-8a4b-123456789abc', 'GET, HEAD'],
    ['PUT', '/payments/0190a6e2-7f6a-7d3c-8a4b-123456789abc/refunds', 'GET, HEAD, POST'],
    ['DELETE', '/payments/0190a6e2-7f6a-7d3c-8a4b-123456789abc/refunds', 'GET, HEAD, POST'],
    ['POST', '/refunds/0190a6e2-7f6a-7d3c-8a4b-123456789abc', 'GET, HEAD'],
    ['PATCH', '/refunds/0190a6e2-7f6a-7d3c-8a4b-123456789abc', 'GET, HEAD'],
  ])('when %s %s, then method_not_allowed with Allow: %s', async (method, path, allow) => {
    const before = await countWrites(db);
    const res = await send(api, method, path, apiKey, valid);
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe(allow);
    expect(await countWrites(db)).toEqual(before);
  });
});

describe('409 and 422 while a request is in flight', () => {
  it('when the same key arrives during the first request, then 409 with Retry-After; a different body gets 422', async () => {
    let release: () => void = () => undefined;
    let entered: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const inside = new Promise<void>((r) => {
      entered = r;
    });
    const slow = await startTestApi(
      db,
      {},
      {
        beforeWrite: async () => {
          entered();
          await gate;
        },
      },
    );
    try {
      const merchant = await slow.merchant();
      const first = postPayment(slow, { apiKey: merchant.apiKey, key: 'in-flight', body: valid });
      await inside;
      const before = await countWrites(db);
      const same = await postPayment(slow, {
        apiKey: merchant.apiKey,
        key: 'in-flight',
        body: valid,
      });
      expectProblem(same, 409, 'idempotency_key_in_use');
      expect(same.headers.get('retry-after')).toBe('1');
      const different = await postPayment(slow, {
        apiKey: merchant.apiKey,
        key: 'in-flight',
        body: { ...valid, amount: 2000 },
      });
      expectProblem(different, 422, 'idempotency_key_reused');
      expect(await countWrites(db)).toEqual(before);
      release();
      expect((await first).status).toBe(202);
      const after = await postPayment(slow, {
        apiKey: merchant.apiKey,
        key: 'in-flight',
        body: valid,
      });
      expect(after.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      release();
      await slow.close();
    }
  });
});

describe('413 and 415', () => {
  it('when the body is over 16 KiB, then payload_too_large', async () => {
    const rawBody = JSON.stringify({ ...valid, description: 'x'.repeat(17 * 1024) });
    expectProblem(await rejected({ rawBody }), 413, 'payload_too_large');
  });

  it.each([['text/plain'], ['application/x-www-form-urlencoded'], [null]])(
    'when Content-Type is %j, then unsupported_media_type',
    async (contentType) => {
      expectProblem(await rejected({ contentType, body: valid }), 415, 'unsupported_media_type');
    },
  );

  it('when a POST says JSON but has no body at all (no Content-Length), then 400 body is empty, not 415', async () => {
    const before = await countWrites(db);
    const url = new URL(api.url('/payments'));
    const head = [
      'POST /payments HTTP/1.1',
      `Host: ${url.host}`,
      `Authorization: Bearer ${apiKey}`,
      'Content-Type: application/json',
      'Idempotency-Key: no-body-at-all',
      'Connection: close',
      '',
      '',
    ].join('\r\n');
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(head);
      });
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => {
        resolve(text);
      });
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toContain('"code":"malformed_json"');
    expect(raw).toContain('The request body is empty.');
    expect(await countWrites(db)).toEqual(before);
  });

  it('when Content-Type has a charset parameter, then it is accepted', async () => {
    const res = await postPayment(api, {
      apiKey,
      contentType: 'application/json; charset=utf-8',
      body: valid,
    });
    expect(res.status).toBe(202);
  });
});

describe('429', () => {
  it('when a merchant exceeds its tier, then rate_limited with Retry-After and the RateLimit fields, nothing is written, and other merchants are unaffected', async () => {
    await db.pool.query(
      "INSERT INTO rate_limit_tiers (name, rate_per_second, burst) VALUES ('tiny', 1, 2)",
    );
    const merchant = await api.merchant('Throttled', 'tiny');
    const other = await api.merchant('Unthrottled');
    const first = await postPayment(api, { apiKey: merchant.apiKey, body: valid });
    expect(first.status).toBe(202);
    expect(first.headers.get('ratelimit-policy')).toBe('"tiny";q=2;w=2');
    expect(first.headers.get('ratelimit')).toMatch(/^"tiny";r=1;t=[12]$/);
    await postPayment(api, { apiKey: merchant.apiKey, body: valid });
    const before = await countWrites(db);
    const res = await postPayment(api, { apiKey: merchant.apiKey, body: valid });
    expectProblem(res, 429, 'rate_limited');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('ratelimit-policy')).toBe('"tiny";q=2;w=2');
    expect(res.headers.get('ratelimit')).toMatch(/^"tiny";r=0;t=2$/);
    expect(await countWrites(db)).toEqual(before);
    const unaffected = await postPayment(api, { apiKey: other.apiKey, body: valid });
    expect(unaffected.status).toBe(202);
    expect(unaffected.headers.get('ratelimit-policy')).toBe('"default";q=200;w=2');
  });

  it('when one address keeps sending unknown keys, then after its burst of failures it gets 429 before any lookup', async () => {
    const limited = await startTestApi(db, {
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1',
      RATE_LIMIT_UNAUTHENTICATED_BURST: '3',
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await postPayment(limited, { apiKey: `sk_guess_${i}`, body: valid });
        statuses.push(res.status);
        if (res.status === 429) {
          expectProblem(res, 429, 'rate_limited');
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
          expect(res.headers.get('ratelimit-policy')).toBe('"unauthenticated";q=3;w=180');
        }
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('503', () => {
  let proxy: TcpProxy;
  let viaProxy: TestApi;
  beforeAll(async () => {
    const url = new URL(db.roleUrl('api'));
    proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
    url.port = String(proxy.port);
    viaProxy = await startTestApi(db, {
      DATABASE_URL: url.toString(),
      UNAVAILABLE_RETRY_AFTER_SECONDS: '3',
    });
  });
  afterAll(async () => {
    await viaProxy.close();
    await proxy.close();
  });

  it('when Postgres goes down, then service_unavailable with Retry-After, nothing half-written, and it recovers by itself', async () => {
    const merchant = await viaProxy.merchant();
    expect((await postPayment(viaProxy, { apiKey: merchant.apiKey, body: valid })).status).toBe(
      202,
    );
    const before = await countWrites(db);
    await proxy.stop();
    let res: Answer;
    try {
      res = await postPayment(viaProxy, {
        apiKey: merchant.apiKey,
        key: 'during-outage',
        body: valid,
      });
    } finally {
      await proxy.start();
    }
    expectProblem(res, 503, 'service_unavailable');
    expect(res.headers.get('retry-after')).toBe('3');
    expect(await countWrites(db)).toEqual(before);

    const retried = await postPayment(viaProxy, {
      apiKey: merchant.apiKey,
      key: 'during-outage',
      body: valid,
    });
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect((await countWrites(db)).payments).toBe(before.payments + 1);
  });
});
