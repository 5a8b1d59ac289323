import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * Issue 36 item 5 (DESIGN 109): readiness means "can do my job". The API and the acquirer run
 * as their own processes, reaching the shared Redis through a TCP proxy this file closes: Redis
 * is away for them alone. The API serves fail-open through the database, so it stays ready and
 * keeps answering 202; its internal health detail names Redis as down, and not required. The
 * acquirer never uses Redis: it has no Redis client at all (DESIGN 117), so neither its readiness
 * nor its detail mentions Redis.
 */

interface Check {
  name: string;
  status: string;
  required?: boolean;
}

let db: TestDatabase;
let fleet: DeployedFleet;
let proxy: TcpProxy;
let apiKey: string;
const internal = new Map<string, string>();

async function post(key: string): Promise<Response> {
  return fetch(`${fleet.apiUrl}/payments`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify({ amount: 1000, currency: 'EUR' }),
    signal: AbortSignal.timeout(15_000),
  });
}

async function detail(role: string): Promise<{ code: number; status: string; checks: Check[] }> {
  const res = await fetch(`${internal.get(role) ?? ''}/readyz`);
  const body = (await res.json()) as { status: string; checks: Check[] };
  return { code: res.status, ...body };
}

beforeAll(async () => {
  db = await createTestDatabase();
  const redis = new URL(testConfig().REDIS_URL);
  proxy = await startTcpProxy(redis.hostname, Number(redis.port || 6379));
  const viaProxy = new URL(redis.toString());
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const env = { REDIS_URL: viaProxy.toString(), READINESS_TIMEOUT_MS: '500' };
  // The API logs in as its own Redis user through the proxy; the acquirer gets no REDIS_URL.
  fleet = await startDeployedFleet(db, ['acquirer', 'api'], {
    acquirer: { READINESS_TIMEOUT_MS: '500' },
    api: env,
  });
  for (const role of ['acquirer', 'api']) {
    const line = await fleet.processes.get(role as 'api')?.logLine('internal listener ready');
    internal.set(role, `http://127.0.0.1:${String(line?.port)}`);
  }
  apiKey = (await createMerchant(db.pool, 'Readiness merchant')).apiKey;
}, 120_000);

afterAll(async () => {
  const codes = await fleet.stop();
  await proxy.close();
  await db.drop();
  expect(codes).toEqual({ api: 0, acquirer: 0 });
});

describe('readiness while Redis is away', () => {
  it('when Redis answers, then every /readyz is 200, the detail marks only postgres required and only the API lists Redis', async () => {
    expect((await fetch(`${fleet.apiUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${fleet.acquirerUrl}/readyz`)).status).toBe(200);
    const api = await detail('api');
    expect(api.code).toBe(200);
    expect(api.checks.map((c) => [c.name, c.status, c.required])).toEqual([
      ['postgres', 'up', true],
      ['redis', 'up', false],
    ]);
    const acquirer = await detail('acquirer');
    expect(acquirer.code).toBe(200);
    expect(acquirer.checks.map((c) => [c.name, c.status, c.required])).toEqual([
      ['postgres', 'up', true],
    ]);
    expect((await post(crypto.randomUUID())).status).toBe(202);
  });

  it('when Redis is unreachable, then both /readyz answer 200, the API detail names redis down and the API still answers 202 (and replays)', async () => {
    await proxy.stop();
    try {
      expect((await fetch(`${fleet.apiUrl}/readyz`)).status).toBe(200);
      expect(await (await fetch(`${fleet.apiUrl}/readyz`)).json()).toEqual({ status: 'ready' });
      expect((await fetch(`${fleet.acquirerUrl}/readyz`)).status).toBe(200);
      const report = await detail('api');
      expect(report.code).toBe(200);
      expect(report.status).toBe('ready');
      expect(report.checks.find((c) => c.name === 'redis')).toMatchObject({
        status: 'down',
        required: false,
      });
      expect((await detail('acquirer')).status).toBe('ready');
      const key = crypto.randomUUID();
      const first = await post(key);
      expect(first.status).toBe(202);
      const created = (await first.json()) as { id: string };
      const replay = await post(key);
      expect(replay.status).toBe(202);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(((await replay.json()) as { id: string }).id).toBe(created.id);
    } finally {
      await proxy.start();
    }
  });
});
