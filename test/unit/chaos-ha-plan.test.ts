import { describe, expect, it } from 'vitest';
import { parseChaosOptions } from '../../tools/chaos/chaos-options.js';
import { planHaFaults, TAIL_SECONDS, WARMUP_SECONDS } from '../../tools/chaos/fault-plan.js';
import type { FaultWindow } from '../../tools/chaos/fault-window.js';
import { HaRun } from '../../tools/chaos/ha-run.js';
import { unquote } from '../../tools/chaos/stack-control.js';
import { Timeline } from '../../tools/chaos/timeline.js';
import type { RequestSample } from '../../tools/load/http-transport.js';

describe('chaos --ha: the leader-kill plan (issue 39)', () => {
  it('when a 60 s run is planned, then the four leaders are killed in order inside it, each held at least 5 s', () => {
    const plan = planHaFaults(60);
    expect(plan.map((fault) => fault.action)).toEqual([
      { kind: 'kill-leader', target: 'kafka-partition-leader' },
      { kind: 'kill-leader', target: 'kafka-controller' },
      { kind: 'kill-leader', target: 'redis-primary' },
      { kind: 'kill-leader', target: 'postgres-primary' },
    ]);
    expect(plan[0]?.atSeconds).toBe(WARMUP_SECONDS);
    for (const fault of plan) {
      expect(fault.holdSeconds).toBeGreaterThanOrEqual(5);
      expect(fault.atSeconds).toBeLessThanOrEqual(60 - TAIL_SECONDS);
    }
  });

  it('when --ha is given with --kafka3, then the command line is refused', () => {
    expect(parseChaosOptions(['--ha'])).toMatchObject({ ha: true, kafka3: false });
    expect(() => parseChaosOptions(['--ha', '--kafka3'])).toThrow(/exclude each other/);
  });
});

describe('chaos --ha: unavailability per phase', () => {
  const window = (label: string, startMs: number, endMs: number): FaultWindow => ({
    fault: {
      label,
      action: { kind: 'kill-leader', target: 'redis-primary' },
      atSeconds: 0,
      holdSeconds: 5,
    },
    startMs,
    endMs,
  });
  const sample = (atMs: number, status: number): RequestSample => ({
    atMs,
    durationMs: 5,
    status,
    error: status === 0 ? 'TimeoutError' : '',
    name: 'POST /payments',
  });

  it('when failures fall in a phase, then its unavailable seconds and recovery come from them, and a phase without a checkpoint fails the run', () => {
    const run = new HaRun({
      root: '/nowhere',
      runId: 'r',
      runDir: '/nowhere',
      env: {},
      // Never queried: no checkpoint runs here.
      db: undefined as never,
      timeline: new Timeline(),
      verifyWaitSeconds: 0,
    });
    const startedAt = 1_000_000;
    const windows = [window('first', 10_000, 20_000), window('second', 30_000, 40_000)];
    const samples = [
      sample(startedAt + 10_500, 503),
      sample(startedAt + 10_900, 0),
      sample(startedAt + 12_200, 503),
      sample(startedAt + 12_300, 202),
      sample(startedAt + 31_000, 202),
    ];
    const { lines, failures } = run.summary(samples, startedAt, windows);
    const first = lines.find((line) => line.trimStart().startsWith('first'));
    const second = lines.find((line) => line.trimStart().startsWith('second'));
    // Seconds 10 and 12 had failures; the last one 2.2 s after the kill.
    expect(first).toMatch(/\s2 s\s+2\.2 s/);
    expect(second).toMatch(/\s0 s\s+0\.0 s/);
    expect(failures).toEqual([
      'no checkpoint ran after "first"',
      'no checkpoint ran after "second"',
    ]);
  });
});

describe("chaos reads scripts/stack.sh env's lines as the shell does", () => {
  it('when a value is single-quoted (a URL with &), then the quotes go and the value stays whole', () => {
    expect(unquote("'postgres://u:p@h:1/db?sslmode=verify-full&sslrootcert=/ca.pem'")).toBe(
      'postgres://u:p@h:1/db?sslmode=verify-full&sslrootcert=/ca.pem',
    );
    expect(unquote("'it'\\''s'")).toBe("it's");
    expect(unquote('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });
});
