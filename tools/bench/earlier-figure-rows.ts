import type { ApiReport, BenchFigures, RelayReport, Row, TracingReport } from './part-reports.js';
import { settledWithinRate } from './pipeline-steps.js';
import { latencies, percent, perSecond, signedPercent } from './report-format.js';
import { webhooksConfiguredBenchRow } from './webhooks-configured.js';

const failed = (part: string): Row => ({
  measure: `${part}'s figures`,
  value: 'not measured (the part failed: see the parts table)',
  reference: '-',
  ratio: '-',
  target: '-',
  pass: false,
});

function apiRows(api: ApiReport): Row[] {
  return [
    webhooksConfiguredBenchRow(api.webhooksConfigured),
    {
      measure: `new payments at half the peak (${api.newPaymentsAtHalfPeak.rate}/s, open loop)`,
      value: latencies(api.newPaymentsAtHalfPeak.latencyMs),
      reference: '-',
      ratio: '-',
      target: 'p99 <= 25 ms',
      pass: api.newPaymentsAtHalfPeak.latencyMs.p99 <= 25,
    },
  ];
}

function relayRows(relay: RelayReport): Row[] {
  const drainVsRaw = percent(relay.drain.perSecond, relay.raw.perSecond);
  return [
    {
      measure: `outbox commit-to-Kafka-ack lag at ${Math.round(relay.lag.achievedRate)} payments/s`,
      value: latencies(relay.lag),
      reference: '-',
      ratio: '-',
      target: 'p99 <= 50 ms at 500/s',
      pass: relay.lag.p99 <= 50,
    },
    {
      measure: `outbox backlog drain (${relay.drain.rows.toLocaleString('en')} rows)`,
      value: perSecond(relay.drain.perSecond),
      reference: `raw kafkajs sendBatch, same records: ${perSecond(relay.raw.perSecond)}`,
      ratio: `${drainVsRaw}%`,
      target: '>= 50% of sendBatch',
      pass: drainVsRaw >= 50,
    },
  ];
}

function tracingOffRow(tracing: TracingReport): Row {
  const off = tracing.summary.find((s) => s.variant === 'off');
  return {
    measure: 'tracing off (preload, no exporter): CPU cost to new payments',
    value: off
      ? `CPU ${signedPercent(off.cpuCostPct)}; throughput ${off.throughputCostPct}% (middle half ${off.throughputCostIqrPct[0]}% to ${off.throughputCostIqrPct[1]}%)`
      : 'not measured',
    reference: 'untraced API, same cycles',
    ratio: '-',
    target: '< 2% (on the CPU cost)',
    pass: off ? off.cpuCostPct < 2 : false,
  };
}

/**
 * The figures of earlier issues, kept so that a change shows when one of them gets worse
 * (issue 29: "no figure in today's report gets worse beyond noise"), each with the target its
 * issue set. Not issue 29's targets.
 */
export function earlierFigureRows(figures: BenchFigures): Row[] {
  const { api, relay, tracing, settleRuns, settleRate } = figures;
  const within = settledWithinRate(settleRuns, 250);
  const outbox = settleRuns[0]?.outbox;
  return [
    ...(api ? apiRows(api) : [failed('bench:api')]),
    ...(relay ? relayRows(relay) : [failed('bench:relay')]),
    {
      measure:
        'highest rate with accepted-to-settled p99 <= 250 ms (every slower step too, all runs)',
      value: within === undefined ? 'none' : perSecond(within),
      reference: '-',
      ratio: '-',
      target: `>= ${settleRate}/s`,
      pass: within !== undefined && within >= settleRate,
    },
    tracing ? tracingOffRow(tracing) : failed('bench:tracing'),
    {
      measure: 'outbox table after the first pipeline run',
      value: outbox
        ? `${outbox.rows.toLocaleString('en')} rows, ${Math.round(outbox.bytes / 1024)} KiB`
        : 'not measured',
      reference: 'published rows are kept OUTBOX_RETENTION_SECONDS (1 h), then deleted',
      ratio: '-',
      target: 'bounded over a long run (not shown by a short one)',
      pass: null,
    },
  ];
}
