import { describe, expect, it } from 'vitest';
import { checkReadiness } from '../../src/platform/readiness.js';

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
});
