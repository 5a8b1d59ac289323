import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyPrefix, generateApiKey } from '../../src/merchants/api-key.js';
import { ConfigError } from '../../src/platform/config/config.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  getJson,
  postPayment,
  startTestApi,
  type Answer,
  type TestApi,
} from '../support/test-api.js';

/**
 * Failed-authentication limits (issue 25, defect 6; DESIGN 35): only failures are counted, per
 * client address and per presented key prefix, and a valid key is never refused for them. A
 * burst of 3 refilled at 1 a minute: nothing refills while a test runs.
 */
const LIMITS = {
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1',
  RATE_LIMIT_UNAUTHENTICATED_BURST: '3',
};
const ADDRESS_POLICY = '"unauthenticated";q=3;w=180';
const PREFIX_POLICY = '"unauthenticated-key-prefix";q=3;w=180';
const payment = { amount: 1000, currency: 'EUR' };

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

async function withApi(
  overrides: Record<string, string>,
  body: (api: TestApi) => Promise<void>,
): Promise<void> {
  const api = await startTestApi(db, { ...LIMITS, ...overrides });
  try {
    await body(api);
  } finally {
    await api.close();
  }
}

/** GET /payments with `apiKey`, as if from `address` (X-Forwarded-For) when one is given. */
async function attempt(api: TestApi, apiKey: string, address?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
  if (address !== undefined) headers['x-forwarded-for'] = address;
  const res = await fetch(api.url('/payments?limit=1'), { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: parseJson(text) };
}

function parseJson(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** A well-formed key (so it costs a lookup) that no merchant has, starting with `prefix`. */
function guessWithPrefix(prefix: string): string {
  return `${prefix}${generateApiKey().slice(prefix.length)}`;
}

function expectRateLimited(res: Answer, policy: string) {
  expect(res.status).toBe(429);
  expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  expect(res.json).toMatchObject({ status: 429, code: 'rate_limited' });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(res.headers.get('ratelimit-policy')).toBe(policy);
  expect(res.headers.get('ratelimit')).toMatch(/;r=0;t=\d+$/);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('failed authentication limits', () => {
  it('when a guesser shares the address of a valid merchant whose cache entry keeps expiring, then the merchant always gets 202/200 and the guesser 429 after its burst', async () => {
    // Behind a load balancer without TRUST_PROXY every client has the balancer's address: here
    // both share 127.0.0.1. The merchant's key is never in the cache (1 ms TTL), so each of its
    // requests is a lookup; on main (74d9fa2) they were refused with 429 once the guesser had
    // emptied the address bucket.
    await withApi({ AUTH_CACHE_TTL_MS: '1' }, async (api) => {
      const merchant = await api.merchant('Behind the balancer');
      const guesses: Answer[] = [];
      const merchantStatuses: number[] = [];
      for (let round = 0; round < 8; round++) {
        guesses.push(await attempt(api, generateApiKey()));
        guesses.push(await attempt(api, generateApiKey()));
        await sleep(5); // past the merchant's cache entry
        merchantStatuses.push(
          (await postPayment(api, { apiKey: merchant.apiKey, body: payment })).status,
        );
        merchantStatuses.push((await getJson(api, '/payments?limit=1', merchant.apiKey)).status);
      }
      expect(merchantStatuses).toEqual(Array.from({ length: 8 }, () => [202, 200]).flat());
      expect(guesses.map((res) => res.status)).toEqual([
        ...[401, 401, 401],
        ...Array.from({ length: 13 }, () => 429),
      ]);
      for (const res of guesses.slice(3)) expectRateLimited(res, ADDRESS_POLICY);
      const { rows } = await db.pool.query<{ n: string }>(
        'SELECT count(*) AS n FROM payments WHERE merchant_id = $1',
        [merchant.id],
      );
      expect(Number(rows[0]?.n)).toBe(8);
    });
  });

  it('when the address is over its failure limit, then a missing or malformed key is 429 too and a valid key still passes', async () => {
    await withApi({}, async (api) => {
      const merchant = await api.merchant('Same address');
      for (let i = 0; i < 3; i++) expect((await attempt(api, generateApiKey())).status).toBe(401);
      expectRateLimited(await attempt(api, 'not-a-key'), ADDRESS_POLICY);
      const noKey = await fetch(api.url('/payments'));
      await noKey.arrayBuffer();
      expect(noKey.status).toBe(429);
      expect((await attempt(api, merchant.apiKey)).status).toBe(200);
    });
  });

  it('when many addresses guess at one key prefix, then that prefix is limited (429) while its valid key and other prefixes are not', async () => {
    await withApi({ TRUST_PROXY: 'loopback' }, async (api) => {
      const victim = await api.merchant('Targeted');
      const prefix = apiKeyPrefix(victim.apiKey);
      const answers: Answer[] = [];
      for (let i = 1; i <= 6; i++) {
        answers.push(await attempt(api, guessWithPrefix(prefix), `198.51.100.${i}`));
      }
      expect(answers.map((res) => res.status)).toEqual([401, 401, 401, 429, 429, 429]);
      for (const res of answers.slice(3)) expectRateLimited(res, PREFIX_POLICY);
      // Each address failed once only: the refusals are the prefix's.
      expect((await attempt(api, guessWithPrefix('sk_zzzz'), '198.51.100.1')).status).toBe(401);
      // The valid key with that prefix passes, from a guessing address and from a new one.
      expect((await attempt(api, victim.apiKey, '198.51.100.4')).status).toBe(200);
      expect((await attempt(api, victim.apiKey, '192.0.2.77')).status).toBe(200);
    });
  });
});

describe('TRUST_PROXY', () => {
  /** Five failures, each from another X-Forwarded-For address and with another key prefix. */
  async function rotatingGuesses(api: TestApi): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i++) {
      statuses.push((await attempt(api, generateApiKey(), `203.0.113.${i}`)).status);
    }
    return statuses;
  }

  it.each([['unset'], ['false'], ['10.0.0.0/8']])(
    'when TRUST_PROXY is %s (the peer 127.0.0.1 is not a trusted proxy), then X-Forwarded-For is ignored and the socket address is limited',
    async (setting) => {
      await withApi(setting === 'unset' ? {} : { TRUST_PROXY: setting }, async (api) => {
        expect(await rotatingGuesses(api)).toEqual([401, 401, 401, 429, 429]);
      });
    },
  );

  it.each([['loopback'], ['1'], ['127.0.0.1, ::1'], ['true']])(
    'when TRUST_PROXY is %s, then the forwarded address is the client: each address has its own failures',
    async (setting) => {
      await withApi({ TRUST_PROXY: setting }, async (api) => {
        expect(await rotatingGuesses(api)).toEqual([401, 401, 401, 401, 401]);
        const same: number[] = [];
        for (let i = 0; i < 4; i++) {
          same.push((await attempt(api, generateApiKey(), '203.0.113.200')).status);
        }
        expect(same).toEqual([401, 401, 401, 429]);
      });
    },
  );

  it('when TRUST_PROXY is a hop count, then the address that many hops back is the client, and what a client prepends is not', async () => {
    await withApi({ TRUST_PROXY: '1' }, async (api) => {
      // The balancer appends the address it saw (203.0.113.9); the client wrote the rest.
      const statuses: number[] = [];
      for (let i = 1; i <= 4; i++) {
        const forwarded = `10.9.9.${i}, 203.0.113.9`;
        statuses.push((await attempt(api, generateApiKey(), forwarded)).status);
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
    });
  });

  it.each([['yes'], ['0'], ['10.0.0.0/33'], ['loopback,'], ['300.1.1.1'], ['10.0.0.0/8/1']])(
    'when TRUST_PROXY=%j, then the API refuses to start with an error naming TRUST_PROXY',
    async (value) => {
      const failure: unknown = await startTestApi(db, { TRUST_PROXY: value }).then(
        async (api) => {
          await api.close();
          return null;
        },
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ConfigError);
      expect((failure as ConfigError).variable).toBe('TRUST_PROXY');
      expect((failure as ConfigError).message).toMatch(
        /^invalid configuration: TRUST_PROXY must be/,
      );
    },
  );
});
