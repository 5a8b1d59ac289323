import { describe, expect, it } from 'vitest';
import { processDependencies, roleDependencies } from '../../src/apps/role-dependencies.js';
import { checkReadiness, checkRequired } from '../../src/platform/lifecycle/readiness.js';

describe('checkReadiness', () => {
  it('when every check passes, then the report is ready and lists each check as up', async () => {
    const report = await checkReadiness(
      [
        { name: 'a', check: () => Promise.resolve() },
        { name: 'b', check: () => Promise.resolve() },
      ],
      100,
    );
    expect(report.status).toBe('ready');
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['a', 'up'],
      ['b', 'up'],
    ]);
  });

  it('when one check throws, then the report is not ready and carries its error', async () => {
    const report = await checkReadiness(
      [
        { name: 'ok', check: () => Promise.resolve() },
        { name: 'broken', check: () => Promise.reject(new Error('connection refused')) },
      ],
      100,
    );
    expect(report.status).toBe('not_ready');
    expect(report.checks[1]).toMatchObject({
      name: 'broken',
      status: 'down',
      error: 'connection refused',
    });
  });

  it('when a check hangs, then it is reported down after the timeout', async () => {
    const report = await checkReadiness(
      [{ name: 'hangs', check: () => new Promise<void>(() => undefined) }],
      20,
    );
    expect(report.checks[0]).toMatchObject({ status: 'down', error: 'no answer within 20 ms' });
  });

  it('when a check not required is down, then the report is ready and lists it as down, not required', async () => {
    const report = await checkReadiness(
      [
        { name: 'postgres', check: () => Promise.resolve() },
        { name: 'redis', check: () => Promise.reject(new Error('refused')) },
      ],
      100,
      ['postgres'],
    );
    expect(report.status).toBe('ready');
    expect(report.checks.map((c) => [c.name, c.status, c.required])).toEqual([
      ['postgres', 'up', true],
      ['redis', 'down', false],
    ]);
  });

  it('when a role asks for its own readiness, then what it does not need is never probed', async () => {
    let redisProbed = false;
    const report = await checkRequired(
      [
        { name: 'postgres', check: () => Promise.resolve() },
        {
          name: 'redis',
          check: () => {
            redisProbed = true;
            return Promise.reject(new Error('refused'));
          },
        },
      ],
      100,
      ['postgres'],
    );
    expect(report).toMatchObject({ status: 'ready', checks: [{ name: 'postgres' }] });
    expect(redisProbed).toBe(false);
  });
});

describe('roleDependencies', () => {
  const open = { REDIS_FAILURE_MODE: 'open' } as const;
  it('when each role is asked, then only what it cannot work without is named', () => {
    expect(roleDependencies('api', open)).toEqual(['postgres']);
    expect(roleDependencies('api', { REDIS_FAILURE_MODE: 'closed' })).toEqual([
      'postgres',
      'redis',
    ]);
    expect(roleDependencies('acquirer', open)).toEqual(['postgres']);
    expect(roleDependencies('webhooks', open)).toEqual(['postgres']);
    expect(roleDependencies('relay', open)).toEqual(['postgres', 'kafka']);
    expect(roleDependencies('settlement', open)).toEqual(['postgres', 'kafka']);
  });

  it('when a process runs several roles, then it needs the union, once each', () => {
    expect(processDependencies(['api', 'relay', 'settlement', 'webhooks'], open)).toEqual([
      'postgres',
      'kafka',
    ]);
  });
});
