/** A figure the bench report judges, met or not: what it measures, the bound and its unit. */
export interface BenchTarget {
  /** What the measured figure is. */
  measures: string;
  /** The bound the measured figure is compared with. */
  figure: number;
  /** The figure's unit, as the report writes it after the number. */
  unit: 'ms' | '%' | '/s' | 'MB';
  /** How the measured figure must compare with the bound to meet the target. */
  comparison: '<=' | '>=' | '<';
}

/**
 * The targets the bench report opens with, in its order (docs/benchmarks.md says where each
 * figure comes from). To move a target, change its figure here: the report and its verdict follow.
 */
export const BENCH_TARGETS = {
  apiCpuPerNewPayment: {
    measures: 'API + Postgres + Redis CPU per new payment (bench:api, closed loop)',
    figure: 0.55,
    unit: 'ms',
    comparison: '<=',
  },
  newPaymentsOfBound: {
    measures: 'new payments/s as a share of the bound 1 / (1/pgbench + 1/bare Express)',
    figure: 60,
    unit: '%',
    comparison: '>=',
  },
  pipelineCpuPerSettled: {
    measures: 'whole-pipeline CPU per settled payment (service processes, Postgres, Kafka, Redis)',
    figure: 2.2,
    unit: 'ms',
    comparison: '<=',
  },
  keepUpRate: {
    measures: 'the highest rate accepted in full with a flat settlement backlog',
    figure: 700,
    unit: '/s',
    comparison: '>=',
  },
  settleP99: {
    measures: 'accepted-to-settled p99 at the settle rate, in every run',
    figure: 250,
    unit: 'ms',
    comparison: '<=',
  },
  replaysOfBareExpress: {
    measures: 'replays/s (Redis hit) as a share of the bare Express endpoint',
    figure: 70,
    unit: '%',
    comparison: '>=',
  },
  apiPeakRss: {
    measures: 'API peak RSS (VmHWM), bench:api and every pipeline run',
    figure: 150,
    unit: 'MB',
    comparison: '<=',
  },
  tracingCpuCost: {
    measures: 'the CPU tracing at 10% sampled adds to new payments',
    figure: 10,
    unit: '%',
    comparison: '<',
  },
} as const satisfies Record<string, BenchTarget>;

/** The target as the report writes it: `<= 0.55 ms`, `>= 60%`, `>= 700/s`. */
export function targetText({ comparison, figure, unit }: BenchTarget): string {
  const gap = unit === '%' || unit === '/s' ? '' : ' ';
  return `${comparison} ${figure}${gap}${unit}`;
}

/** Whether `value` (in the target's unit) meets the target. */
export function meetsTarget({ comparison, figure }: BenchTarget, value: number): boolean {
  if (comparison === '<=') return value <= figure;
  if (comparison === '>=') return value >= figure;
  return value < figure;
}
