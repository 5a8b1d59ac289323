import { describe, expect, it } from 'vitest';
import { createOutageLog } from '../../src/platform/resilience/outage-log.js';
import { capturedLogger } from '../support/captured-logger.js';

describe('outage log', () => {
  it('when a dependency fails 1,000 times over 25 s, then it logs one warning per 10 s interval and one line with the duration when it is back', () => {
    const { lines, logger } = capturedLogger();
    let now = 0;
    const outage = createOutageLog('redis', logger, 10_000, () => now);
    for (let i = 0; i < 1_000; i++) {
      now = i * 25;
      outage.failed(new Error('Command timed out'));
    }
    expect(outage.down).toBe(true);
    now = 25_000;
    outage.succeeded();
    outage.succeeded();

    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, 'redis unavailable'],
      [40, 'redis still unavailable'],
      [40, 'redis still unavailable'],
      [30, 'redis available again'],
    ]);
    expect(lines[0]?.error).toBe('Error: Command timed out');
    expect(lines[0]).not.toHaveProperty('err');
    expect(lines[1]).toMatchObject({ down_for_ms: 10_000, failures_since_last_line: 400 });
    expect(lines[3]).toMatchObject({ down_for_ms: 25_000, failures: 1_000 });
    expect(outage.down).toBe(false);
  });

  it('when successes come without an outage, then nothing is logged', () => {
    const { lines, logger } = capturedLogger();
    const outage = createOutageLog('postgres', logger, 1_000);
    for (let i = 0; i < 100; i++) outage.succeeded();
    expect(lines).toEqual([]);
  });
});
