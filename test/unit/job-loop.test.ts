import { describe, expect, it } from 'vitest';
import { createOutageLog } from '../../src/platform/resilience/outage-log.js';
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

  it('when the intake claims its own jobs (while-backlog), then a finished job triggers no claim unless the last claim was full or work was announced', async () => {
    const { logger } = capturedLogger();
    let claims = 0;
    let finishJob!: () => void;
    const finished = new Promise<void>((resolve) => (finishJob = resolve));
    const loop = createJobLoop<ClaimedJob>({
      kind: 'settlement',
      concurrency: 4,
      pollMs: 60_000,
      outage: createOutageLog('postgres', logger, 60_000),
      claimAfterFinish: 'while-backlog',
      claim: () => {
        claims++;
        return Promise.resolve([]);
      },
      work: () => finished,
      nextDueAt: () => Promise.resolve(null),
    });
    loop.start();
    await expect.poll(() => claims).toBe(1);
    // Two slots held by an intake, one job adopted: the leftover slot is announced (a claim).
    expect(loop.reserve(2)).toBe(2);
    loop.adopt([{ ...job('a') }], 2);
    await expect.poll(() => claims).toBe(2);
    // The adopted job finishes with nothing announced: no claim.
    finishJob();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(claims).toBe(2);
    // New work announced: a claim at once.
    loop.wake();
    await expect.poll(() => claims).toBe(3);
    await loop.stop();
    expect(loop.reserve(1)).toBe(0);
  });
});

function job(id: string): ClaimedJob {
  return {
    id,
    leaseOwner: 'owner',
    attempts: 1,
    exhausted: false,
    lastFailure: null,
    firstFailureAt: null,
    needsInquiry: false,
    lastInquiry: null,
    notSent: 0,
  };
}
