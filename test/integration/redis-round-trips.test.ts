import type { Command } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postPayment, startTestApi, type TestApi } from '../support/test-api.js';
import { isCluster } from '../support/test-redis-client.js';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let merchantId: string;
/** The API's Redis commands that name this merchant, as `name` (script commands by key count). */
const sent: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  ({ apiKey, id: merchantId } = await api.merchant());
  // Loads the scripts (a Redis that has never seen one answers NOSCRIPT once, then EVAL).
  for (let i = 0; i < 2; i++) await postPayment(api, { apiKey, key: 'warm-up' });
  const redis = api.platform.redis;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command: Command, ...rest: unknown[]) => {
    const args = command.args.map(String);
    if (args.some((arg) => arg.includes(merchantId))) sent.push(command.name.toLowerCase());
    return (send as (c: Command, ...r: unknown[]) => unknown)(command, ...rest);
  };
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

/** The commands one request sent; every one of them is answered before the response is. */
async function commandsOf(request: () => Promise<{ status: number }>, status: number) {
  sent.length = 0;
  expect((await request()).status).toBe(status);
  return [...sent];
}

describe('Redis commands on the POST path (DESIGN: one command per step)', () => {
  it('when the run is against a Redis Cluster (test:redis-cluster), then the API uses a Cluster client', () => {
    expect(isCluster(api.platform.redis)).toBe(inject('services').redisClusterNodes !== undefined);
  });

  it('when a payment is new, then three commands: rate limit + cache read, claim, cache write + release', async () => {
    const create = () => postPayment(api, { apiKey, key: 'trips-1' });
    expect(await commandsOf(create, 202)).toEqual(['evalsha', 'evalsha', 'evalsha']);
  });

  it('when a payment is replayed from the cache, then one command: the rate limit with the cache read', async () => {
    const replay = () => postPayment(api, { apiKey, key: 'trips-1' });
    expect(await commandsOf(replay, 202)).toEqual(['evalsha']);
  });
});
