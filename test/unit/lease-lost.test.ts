import { describe, expect, it } from 'vitest';
import { createLeaseLostLog, LeaseLostError } from '../../src/jobs/lease-lost.js';
import { metricsRegistry } from '../../src/platform/telemetry/metrics.js';
import { capturedLogger } from '../support/captured-logger.js';

async function lost(kind: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('jobs_lease_lost_total')?.get();
  return metric?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

describe('lost job leases', () => {
  it('when a paused worker loses 300 leases over 25 s, then each is counted and one line per 10 s interval says how many', async () => {
    const { lines, logger } = capturedLogger();
    let now = 0;
    const report = createLeaseLostLog('refund', logger, 10_000, () => now);
    expect(await lost('refund')).toBe(0); // exported before the first loss
    for (let i = 0; i < 300; i++) {
      now = i * 84; // the last at 25.1 s
      report(new LeaseLostError('refund', 'retry', `job-${String(i)}`));
    }

    expect(await lost('refund')).toBe(300);
    expect(lines.map((l) => l.msg)).toEqual([
      'refund job lease lost before a write; not applied (another worker holds the job)',
      'refund job lease lost before a write; not applied (another worker holds the job)',
      'refund job lease lost before a write; not applied (another worker holds the job)',
    ]);
    expect(lines.map((l) => l.lost_since_last_line)).toEqual([1, 120, 120]);
    expect(lines[0]).toMatchObject({
      level: 40,
      job_kind: 'refund',
      write: 'retry',
      job_id: 'job-0',
    });
  });
});
