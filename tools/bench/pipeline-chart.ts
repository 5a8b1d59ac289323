import { renderLatencyChart } from './latency-chart.js';
import type { PipelineResult, SweepStep } from './measure-pipeline.js';
import type { ApiReport } from './part-reports.js';
import { pipelineSteps } from './pipeline-steps.js';

/** The latency-versus-rate chart of every pipeline step (sweep and fixed-rate runs), SVG. */
export function pipelineChart(api: ApiReport | undefined, runs: readonly PipelineResult[]): string {
  const steps = pipelineSteps(runs).map(({ step }) => step);
  steps.sort((a, b) => a.rate - b.rate);
  const points = (pick: (step: SweepStep) => number) =>
    steps.map((step) => ({ x: step.rate, y: pick(step) }));
  const settleRate = runs[0]?.settleRate ?? 500;
  return renderLatencyChart(
    [
      { name: 'POST /payments p50', color: '#1f77b4', points: points((s) => s.api.latencyMs.p50) },
      { name: 'POST /payments p99', color: '#ff7f0e', points: points((s) => s.api.latencyMs.p99) },
      { name: 'accepted-to-settled p99', color: '#2ca02c', points: points((s) => s.settle.p99) },
    ],
    {
      title: "Latency versus offered rate (the pipeline's processes, one 2-core machine)",
      xLabel: 'offered rate, new payments per second (open loop)',
      yLabel: 'latency, ms (log scale)',
      targets: [{ value: 250, label: `settled p99 target at ${settleRate}/s: 250 ms` }],
      rates: [
        ...(api
          ? [{ value: api.newPaymentsAtHalfPeak.rate, label: 'half of bench:api peak' }]
          : []),
        { value: settleRate, label: `${settleRate}/s` },
        { value: 700, label: 'keep-up target 700/s' },
      ],
    },
  );
}
