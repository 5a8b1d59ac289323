import { describe, expect, it } from 'vitest';
import type { RunResult } from '../../tools/bench/load.js';
import type { PipelineResult } from '../../tools/bench/measure-pipeline.js';
import { newPaymentBound } from '../../tools/bench/new-payment-bound.js';
import type { BenchFigures } from '../../tools/bench/part-reports.js';
import { pipelineCpuPerSettled } from '../../tools/bench/pipeline-cpu.js';
import { targetRows } from '../../tools/bench/target-rows.js';
import { BENCH_TARGETS, meetsTarget } from '../../tools/bench/targets.js';

const runResult = (perSecond: number, p99 = 10): RunResult => ({
  requests: perSecond * 10,
  seconds: 10,
  perSecond,
  statuses: { '202': perSecond * 10 },
  latencyMs: { p50: p99 / 2, p95: p99, p99, max: p99 },
});

const flat = {
  windowSeconds: 60,
  slopePerSecond: 0,
  first: 50,
  last: 50,
  verdict: 'flat' as const,
};

// Not a literal: the acquirer's figure is there once the pipeline runs it as a process of its own.
const peakRssMb = { api: 120, relay: 90, settlement: 95, acquirer: 40 };

function pipelineRun(
  settleP99: number,
  cpuSeconds: Record<string, number>,
  sweep: { rate: number; achieved: number; growing?: boolean }[] = [],
): PipelineResult {
  const settle = {
    payments: 1000,
    unsettled: 0,
    p50: 50,
    p95: settleP99,
    p99: settleP99,
    max: settleP99,
    stages: {
      relay: { p50: 1, p99: 2 },
      consumer: { p50: 1, p99: 2 },
      worker: { p50: 1, p99: 2 },
    },
    windows: [],
  };
  return {
    settleRate: 500,
    api: runResult(500),
    settle,
    backlog: flat,
    sweep: sweep.map(({ rate, achieved, growing }) => ({
      rate,
      api: runResult(achieved),
      settle,
      backlog: growing ? { ...flat, verdict: 'growing' as const, slopePerSecond: 99 } : flat,
    })),
    peakRssMb,
    cpuSeconds,
    wallSeconds: 20,
    outbox: { rows: 10, bytes: 8192 },
  };
}

function figures(runs: PipelineResult[], wanted = 3): BenchFigures {
  return {
    api: {
      settings: { concurrency: 16, seconds: 10 },
      newPayments: runResult(2400),
      newPaymentsCpu: {
        payments: 24_000,
        seconds: { api: 6, postgres: 5, redis: 1 },
        msPerPayment: { api: 0.25, postgres: 0.208, redis: 0.042, total: 0.5 },
      },
      pgbenchSameStatement: runResult(6000),
      newPaymentsAtHalfPeak: { rate: 1200, ...runResult(1200) },
      replays: runResult(5000),
      bareExpress: runResult(7000),
      apiPeakRssMb: 140,
    },
    relay: {
      lag: { events: 100, achievedRate: 500, p50: 5, p95: 10, p99: 20 },
      drain: { rows: 100, perSecond: 2000 },
      raw: { perSecond: 3000 },
    },
    tracing: {
      settings: { cycles: 40, sliceSeconds: 1.5 },
      summary: [
        {
          variant: 'sampled 10%',
          throughputCostPct: 3,
          throughputCostIqrPct: [1, 5],
          cpuCostPct: 9.9,
          apiCpuMsPerPayment: 0.3,
        },
      ],
    },
    settleRuns: runs,
    settleRunsWanted: wanted,
    settleRate: 500,
  };
}

// 1,000 settled payments per run: 1 CPU second is 1 ms per payment.
const cpu = { api: 0.5, relay: 0.3, settlement: 0.4, postgres: 0.8, kafka: 0.1, redis: 0.05 };

describe("the bench report's targets", () => {
  it('when the figures meet every target, then every row is met, one per target in its order', () => {
    const runs = [
      pipelineRun(200, { ...cpu, acquirer: 0.2, 'load generator': 0.3 }, [
        { rate: 250, achieved: 250 },
        { rate: 700, achieved: 699 },
        { rate: 850, achieved: 600, growing: true },
      ]),
      pipelineRun(240, cpu),
      pipelineRun(249, cpu),
    ];
    const rows = targetRows(figures(runs));
    expect(rows).toHaveLength(Object.keys(BENCH_TARGETS).length);
    expect(rows.map((row) => row.pass)).toEqual(Array(rows.length).fill(true));
    expect(rows[3]?.value).toBe('700/s');
    expect(rows.map((row) => row.target)).toEqual([
      '<= 0.55 ms',
      '>= 60% of the bound',
      '<= 2.2 ms (service processes, Postgres, Kafka, Redis)',
      '>= 700/s',
      '<= 250 ms in 3 runs of 3',
      '>= 70% of bare Express',
      '<= 150 MB',
      '< 10% CPU',
    ]);
  });

  it('when a value sits on the figure, then an inclusive target is met and a strict one is not', () => {
    expect(meetsTarget(BENCH_TARGETS.apiPeakRss, 150)).toBe(true);
    expect(meetsTarget(BENCH_TARGETS.keepUpRate, 700)).toBe(true);
    expect(meetsTarget(BENCH_TARGETS.keepUpRate, 699)).toBe(false);
    expect(meetsTarget(BENCH_TARGETS.tracingCpuCost, 10)).toBe(false);
  });

  it('when one of the three runs at 500/s misses 250 ms, then the p99 target is not met', () => {
    const runs = [pipelineRun(200, cpu), pipelineRun(251, cpu), pipelineRun(100, cpu)];
    const row = targetRows(figures(runs))[4];
    expect(row?.pass).toBe(false);
    expect(row?.ratio).toBe('2/3 runs');
  });

  it('when only two of the three runs were made, then the p99 target is not met', () => {
    const row = targetRows(figures([pipelineRun(10, cpu), pipelineRun(10, cpu)]))[4];
    expect(row?.pass).toBe(false);
  });

  it('when no pipeline run was measured, then its rows say so and are not met', () => {
    const rows = targetRows(figures([]));
    expect(rows[2]?.value).toBe('not measured');
    expect([rows[2]?.pass, rows[3]?.pass, rows[4]?.pass]).toEqual([false, false, false]);
  });

  it('when bench:api failed, then its rows are not measured and RSS comes from the pipeline', () => {
    const rows = targetRows({ ...figures([pipelineRun(10, cpu)], 1), api: undefined });
    expect([0, 1, 5].map((i) => rows[i]?.value)).toEqual(Array(3).fill('not measured'));
    expect(rows[6]?.value).toBe('120 MB');
    expect(rows[6]?.pass).toBe(true);
  });

  it('when the sweep falls behind below 700/s, then the keep-up target is not met', () => {
    const runs = [pipelineRun(200, cpu, [{ rate: 700, achieved: 700, growing: true }])];
    const row = targetRows(figures(runs, 1))[3];
    expect(row?.value).toBe('500/s');
    expect(row?.pass).toBe(false);
  });
});

describe('the whole-pipeline CPU per settled payment', () => {
  it('when the acquirer and the load generator are measured, then they are shown but not summed', () => {
    const result = pipelineCpuPerSettled([
      pipelineRun(100, { ...cpu, acquirer: 1, 'load generator': 1 }),
      pipelineRun(100, { ...cpu, acquirer: 1, 'load generator': 1 }),
    ]);
    expect(result.settled).toBe(2000);
    expect(result.serviceTotal).toBeCloseTo(2.15, 3);
    expect(result.msPerSettled.acquirer).toBe(1);
    expect(result.acquirerApart).toBe(true);
  });

  it('when the acquirer runs inside settlement, then the report says it is not apart', () => {
    expect(pipelineCpuPerSettled([pipelineRun(100, cpu)]).acquirerApart).toBe(false);
  });
});

describe('the bound on new payments', () => {
  it('when pgbench and bare Express are measured, then their costs per payment add up', () => {
    expect(newPaymentBound(6000, 3000)).toBe(2000);
    expect(newPaymentBound(0, 3000)).toBe(0);
  });
});
