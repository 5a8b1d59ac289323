import type { ApiCpu } from './api-cpu-window.js';
import type { RunResult } from './load.js';
import type { PipelineResult } from './measure-pipeline.js';
import type { WebhooksConfiguredResult } from './webhooks-configured.js';

/** The parts of bench:api's JSON report `npm run bench` reads (tools/cli/bench-api.ts). */
export interface ApiReport {
  settings: { concurrency: number; seconds: number };
  newPayments: RunResult;
  /** API + Postgres + Redis CPU of the new-payment run (absent in reports before issue 29). */
  newPaymentsCpu?: ApiCpu;
  pgbenchSameStatement: RunResult;
  newPaymentsAtHalfPeak: RunResult & { rate: number };
  replays: RunResult;
  bareExpress: RunResult;
  apiPeakRssMb: number;
  /** Issue 27's A/B (null when BENCH_WEBHOOK_CYCLES=0; absent in reports before it). */
  webhooksConfigured?: WebhooksConfiguredResult | null;
}

/** bench:relay's JSON line (tools/cli/bench-relay.ts). */
export interface RelayReport {
  lag: { events: number; achievedRate: number; p50: number; p95: number; p99: number };
  drain: { rows: number; perSecond: number };
  raw: { perSecond: number };
}

/** The parts of bench:tracing's JSON report used here (tools/cli/bench-tracing.ts). */
export interface TracingReport {
  settings: { cycles: number; sliceSeconds: number };
  summary: {
    variant: string;
    throughputCostPct: number;
    throughputCostIqrPct: [number, number];
    cpuCostPct: number;
    apiCpuMsPerPayment: number;
  }[];
}

/** One part of the run: when it ran, how long, and how busy the machine was around it. */
export interface PartRecord {
  part: string;
  startedAt: string;
  wallSeconds: number;
  /** 1/5/15-minute load averages when the part started and when it ended. */
  loadAverageStart: number[];
  loadAverageEnd: number[];
  /** Why the part has no figures (it failed; the later parts still ran). */
  error?: string;
}

/** Everything the report is made of; the pipeline's runs at the settle rate, the first with the sweep. */
export interface BenchFigures {
  /** Undefined when its part failed: the other parts still ran and are reported. */
  api: ApiReport | undefined;
  relay: RelayReport | undefined;
  tracing: TracingReport | undefined;
  settleRuns: PipelineResult[];
  /** How many runs at the settle rate the bench meant to make (issue 29: three). */
  settleRunsWanted: number;
  settleRate: number;
}

/** A line of a report table: a figure next to its same-run reference and its target. */
export interface Row {
  measure: string;
  value: string;
  reference: string;
  ratio: string;
  target: string;
  /** Met (true), not met (false), or no target (null). */
  pass: boolean | null;
}
