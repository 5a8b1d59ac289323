import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../src/apps/api/start-api.js';
import type { RunningRole } from '../../src/apps/running-role.js';
import {
  startInternalServer,
  type InternalServer,
} from '../../src/platform/lifecycle/internal-server.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createPlatform, type Platform } from '../../src/platform/lifecycle/platform.js';
import { processDependencies } from '../../src/apps/role-dependencies.js';
import { checkReadiness } from '../../src/platform/lifecycle/readiness.js';
import { testConfig } from '../support/isolation.js';

interface Served {
  platform: Platform;
  api: RunningRole & { port: number };
  internalServer: InternalServer;
  url: (path: string) => string;
  /** The internal listener, as run-roles starts it next to every role. */
  internal: (path: string) => string;
}

async function serve(
  overrides: Record<string, string> = {},
  options: { kafka: boolean } = { kafka: true },
): Promise<Served> {
  const config = testConfig(overrides);
  const platform = await createPlatform(config, createLogger(config), options);
  const api = await startApi(platform);
  const internalServer = await startInternalServer(
    {
      host: '127.0.0.1',
      port: 0,
      // As run-roles builds it: every dependency listed, the API's needs deciding.
      readiness: () =>
        checkReadiness(
          platform.checks,
          config.READINESS_TIMEOUT_MS,
          processDependencies(options.kafka ? ['api', 'relay'] : ['api'], config),
        ),
    },
    platform.logger,
  );
  return {
    platform,
    api,
    internalServer,
    url: (path) => `http://127.0.0.1:${api.port}${path}`,
    internal: (path) => `http://127.0.0.1:${internalServer.port}${path}`,
  };
}

async function stop(served: Served) {
  await served.internalServer.close();
  await served.api.close();
  await served.platform.close();
}

let healthy: Served;
beforeAll(async () => {
  healthy = await serve();
});
afterAll(async () => {
  await stop(healthy);
});

describe('health endpoints', () => {
  it('when Postgres, Redis and Kafka are all unreachable, then /healthz still answers 200 at once while /readyz is 503', async () => {
    // Closed loopback ports: every dependency refuses. A /healthz that consulted any of them
    // would fail or wait here; liveness must depend on the process alone.
    const isolated = await serve({
      DATABASE_URL: 'postgres://payments_api:payments_api@127.0.0.1:1/payments',
      REDIS_URL: 'redis://127.0.0.1:1',
      KAFKA_BROKERS: '127.0.0.1:1',
      READINESS_TIMEOUT_MS: '500',
    });
    try {
      const started = performance.now();
      const res = await fetch(isolated.url('/healthz'));
      const body: unknown = await res.json();
      const elapsedMs = performance.now() - started;
      expect(res.status).toBe(200);
      expect(body).toEqual({ status: 'ok' });
      expect(elapsedMs).toBeLessThan(250);

      const publicReady = await fetch(isolated.url('/readyz'));
      expect(publicReady.status).toBe(503);
      expect(await publicReady.json()).toEqual({ status: 'not_ready' });
      const ready = await fetch(isolated.internal('/readyz'));
      const report = (await ready.json()) as { checks: { name: string; status: string }[] };
      expect(ready.status).toBe(503);
      expect(report.checks.map((c) => [c.name, c.status])).toEqual([
        ['postgres', 'down'],
        ['redis', 'down'],
        ['kafka', 'down'],
      ]);
    } finally {
      await stop(isolated);
    }
  });

  it('when Postgres, Redis and Kafka answer, then the public /readyz is 200 and says only "ready"', async () => {
    const res = await fetch(healthy.url('/readyz'));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it('when Postgres, Redis and Kafka answer, then the internal /readyz is 200 and lists all three as up', async () => {
    const res = await fetch(healthy.internal('/readyz'));
    const body = (await res.json()) as {
      status: string;
      checks: { name: string; status: string }[];
    };
    expect(res.status).toBe(200);
    expect(body.status).toBe('ready');
    expect(body.checks.map((c) => [c.name, c.status])).toEqual([
      ['postgres', 'up'],
      ['redis', 'up'],
      ['kafka', 'up'],
    ]);
  });

  it('when the API runs without a Kafka role and Kafka is unreachable, then /readyz is 200 without probing Kafka', async () => {
    // The API takes payments through the outbox whether Kafka is up or not (DESIGN 24).
    const apiOnly = await serve({ KAFKA_BROKERS: '127.0.0.1:1' }, { kafka: false });
    try {
      const res = await fetch(apiOnly.internal('/readyz'));
      const body = (await res.json()) as { checks: { name: string; status: string }[] };
      expect(res.status).toBe(200);
      expect(body.checks.map((c) => [c.name, c.status])).toEqual([
        ['postgres', 'up'],
        ['redis', 'up'],
      ]);
    } finally {
      await stop(apiOnly);
    }
  });

  it('when Redis is unreachable, then the API stays ready (it serves fail-open) and the internal detail names redis down, not required', async () => {
    const broken = await serve({ REDIS_URL: 'redis://127.0.0.1:1', READINESS_TIMEOUT_MS: '500' });
    try {
      const open = await fetch(broken.url('/readyz'));
      expect(open.status).toBe(200);
      expect(await open.json()).toEqual({ status: 'ready' });
      const res = await fetch(broken.internal('/readyz'));
      const body = (await res.json()) as { checks: { name: string; status: string }[] };
      expect(res.status).toBe(200);
      expect(body.checks.find((c) => c.name === 'redis')).toMatchObject({
        status: 'down',
        required: false,
      });
      expect(body.checks.find((c) => c.name === 'postgres')?.status).toBe('up');
    } finally {
      await stop(broken);
    }
  });

  it('when Redis is unreachable and the API fails closed, then the public /readyz is 503 without detail and redis is required', async () => {
    const broken = await serve({
      REDIS_URL: 'redis://127.0.0.1:1',
      READINESS_TIMEOUT_MS: '500',
      REDIS_FAILURE_MODE: 'closed',
    });
    try {
      const open = await fetch(broken.url('/readyz'));
      expect(open.status).toBe(503);
      expect(await open.json()).toEqual({ status: 'not_ready' });
      const res = await fetch(broken.internal('/readyz'));
      const body = (await res.json()) as { checks: { name: string; status: string }[] };
      expect(res.status).toBe(503);
      expect(body.checks.find((c) => c.name === 'redis')).toMatchObject({
        status: 'down',
        required: true,
      });
    } finally {
      await stop(broken);
    }
  });

  it('when Postgres is unreachable, then the internal /readyz is 503 and names postgres as down', async () => {
    const broken = await serve({
      DATABASE_URL: 'postgres://payments_api:payments_api@127.0.0.1:1/payments',
      READINESS_TIMEOUT_MS: '500',
    });
    try {
      const res = await fetch(broken.internal('/readyz'));
      const body = (await res.json()) as { checks: { name: string; status: string }[] };
      expect(res.status).toBe(503);
      expect(body.checks.find((c) => c.name === 'postgres')?.status).toBe('down');
    } finally {
      await stop(broken);
    }
  });

  it('when a client sends X-Request-Id, then the response echoes it; otherwise one is minted', async () => {
    const echoed = await fetch(healthy.url('/healthz'), { headers: { 'X-Request-Id': 'abc-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('abc-123');
    const minted = await fetch(healthy.url('/healthz'));
    expect(minted.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('when /openapi.json is requested, then the generated OpenAPI 3.1 document is served', async () => {
    const res = await fetch(healthy.url('/openapi.json'));
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths).toHaveProperty('/payments');
  });

  it('when /asyncapi.yaml is requested, then the AsyncAPI document is served as YAML', async () => {
    const res = await fetch(healthy.url('/asyncapi.yaml'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/yaml');
    expect(await res.text()).toContain('asyncapi: 3.0.0');
  });

  it('when /metrics is requested on the internal listener, then Prometheus text with process metrics is served', async () => {
    const res = await fetch(healthy.internal('/metrics'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('process_resident_memory_bytes');
  });

  it('when /metrics is requested on the public port, then it is not there (404)', async () => {
    expect((await fetch(healthy.url('/metrics'))).status).toBe(404);
  });

  it('when the internal listener gets a path it does not serve, then 404; another method, 405', async () => {
    expect((await fetch(healthy.internal('/payments'))).status).toBe(404);
    const post = await fetch(healthy.internal('/metrics'), { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });

  it('when a route does not exist, then the answer is a problem+json 404', async () => {
    const res = await fetch(healthy.url('/nope'));
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(await res.json()).toMatchObject({ status: 404, code: 'not_found' });
  });
});
