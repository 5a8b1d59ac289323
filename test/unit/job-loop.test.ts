import { describe, expect, it } from 'vitest';
import { createOutageLog } from '../../src/platform/outage-log.js';
import { createJobLoop } from '../../src/jobs/job-loop.js';
import type { ClaimedJob } from '../../src/jobs/job-table.js';
import { capturedLogger } from '../support/captured-logger.js';

function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
}

describe('job loop', () => {
  it('when every claim fails for 40 polls (Postgres down), then the outage costs one warning and one line when it ends, and claiming resumes', async () => {
    const { lines, logger } = capturedLogger();
    const outage = createOutageLog('postgres', logger, 60_000);
    let claims = 0;
    let resumed!: () => void;
    const claimedAgain = new Promise<void>((resolve) => (resumed = resolve));
    const loop = createJobLoop({
      kind: 'settlement',
      concurrency: 4,
      pollMs: 10,
      outage,
      claim: () => {
        claims++;
        if (claims <= 40) return Promise.reject(refused());
        if (claims === 42) resumed();
        return Promise.resolve([] as ClaimedJob[]);
      },
      work: () => Promise.resolve(),
      nextDueAt: () => Promise.resolve(null),
    });
    loop.start();
    await claimedAgain;
    await loop.stop();

    expect(claims).toBeGreaterThanOrEqual(42);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, 'postgres unavailable'],
      [30, 'postgres available again'],
    ]);
    expect(lines[0]).toMatchObject({ action: 'settlement claim failed; retrying' });
    expect(lines[0]).not.toHaveProperty('err');
    expect(lines[1]).toMatchObject({ failures: 40 });
  });
});
