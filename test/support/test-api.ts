import { startApi, type ApiOptions } from '../../src/apps/api/start-api.js';
import type { RunningRole } from '../../src/apps/running-role.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { createPlatform, type Platform } from '../../src/platform/lifecycle/platform.js';
import { testConfig, type TestDatabase } from './isolation.js';

export interface TestApi {
  platform: Platform;
  api: RunningRole & { port: number };
  url: (path: string) => string;
  /** A new merchant (on `tier`, default `default`) and its first API key, in this file's database. */
  merchant: (
    name?: string,
    tier?: string,
  ) => Promise<{ id: string; apiKey: string; apiKeyId: string }>;
  close: () => Promise<void>;
}

/**
 * The real API (real Postgres, Redis, Kafka clients) on port 0, against `db`, logged in as
 * payments_api as deployed. Merchants are created with the owner's pool, as the owner-only
 * `npm run merchant:create` does.
 */
export async function startTestApi(
  db: TestDatabase,
  overrides: Record<string, string> = {},
  options: ApiOptions = {},
): Promise<TestApi> {
  const config = testConfig({ DATABASE_URL: db.roleUrl('api'), ...overrides });
  const platform = await createPlatform(config, createLogger(config));
  const api = await startApi(platform, options);
  return {
    platform,
    api,
    url: (path) => `http://127.0.0.1:${api.port}${path}`,
    merchant: async (name = 'Test merchant', tier?: string) => {
      const created = await createMerchant(db.pool, name, tier);
      return { id: created.id, apiKey: created.apiKey, apiKeyId: created.apiKeyId };
    },
    close: async () => {
      await api.close();
      await platform.close();
    },
  };
}

export interface PostOptions {
  apiKey: string;
  key?: string | null;
  body?: unknown;
  /** Sent as is: a string is encoded as UTF-8, bytes are not touched. */
  rawBody?: string | Uint8Array;
  contentType?: string | null;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

/** POST /payments as a client would send it; `null` leaves a header out. */
export async function postPayment(api: TestApi, options: PostOptions): Promise<Answer> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.apiKey}`,
    ...options.headers,
  };
  if (options.key !== null) headers['idempotency-key'] = options.key ?? crypto.randomUUID();
  if (options.contentType !== null)
    headers['content-type'] = options.contentType ?? 'application/json';
  const res = await fetch(api.url('/payments'), {
    method: 'POST',
    headers,
    body: options.rawBody ?? JSON.stringify(options.body ?? { amount: 1000, currency: 'EUR' }),
  });
  return toAnswer(res);
}

export async function getJson(api: TestApi, path: string, apiKey: string): Promise<Answer> {
  return toAnswer(await fetch(api.url(path), { headers: { authorization: `Bearer ${apiKey}` } }));
}

/** Any method on any path, authenticated, with an optional JSON body. */
export async function send(
  api: TestApi,
  method: string,
  path: string,
  apiKey: string,
  body?: unknown,
): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return toAnswer(
    await fetch(api.url(path), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

async function toAnswer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON; callers assert on text
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Row counts of everything a POST may write, for "nothing was written" assertions. */
export async function countWrites(
  db: TestDatabase,
): Promise<{ payments: number; keys: number; outbox: number }> {
  const { rows } = await db.pool.query<{ payments: string; keys: string; outbox: string }>(
    `SELECT (SELECT count(*) FROM payments) AS payments,
            (SELECT count(*) FROM idempotency_keys) AS keys,
            (SELECT count(*) FROM outbox) AS outbox`,
  );
  const row = rows[0];
  return { payments: Number(row?.payments), keys: Number(row?.keys), outbox: Number(row?.outbox) };
}
