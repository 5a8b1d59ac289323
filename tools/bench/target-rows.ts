import type { BenchFigures, Row } from './part-reports.js';
import { describePipelineCpu, pipelineCpuPerSettled } from './pipeline-cpu.js';
import {
  highestRateOffered,
  keepUpRate,
  runVerdictInput,
  settledWithin,
} from './pipeline-steps.js';
import { newPaymentBound } from './new-payment-bound.js';
import { cpuMs, latencies, ms, percent, perSecond, signedPercent } from './report-format.js';
import { BENCH_TARGETS, meetsTarget, targetText } from './targets.js';

const T = BENCH_TARGETS;

const NOT_MEASURED = { value: 'not measured', reference: '-', ratio: '-', pass: false };

function apiCpuRow({ api }: BenchFigures): Row {
  const measure = 'API + Postgres + Redis CPU per new payment (bench:api, closed loop)';
  const target = targetText(T.apiCpuPerNewPayment);
  const cpu = api?.newPaymentsCpu;
  if (!api || !cpu) return { measure, target, ...NOT_MEASURED };
  const { msPerPayment: m } = cpu;
  return {
    measure: `${measure}, concurrency ${api.settings.concurrency}`,
    value: `${cpuMs(m.total)} (api ${m.api}, Postgres ${m.postgres}, Redis ${m.redis})`,
    reference: `${cpu.payments.toLocaleString('en')} payments at ${perSecond(api.newPayments.perSecond)}`,
    ratio: '-',
    target,
    pass: cpu.payments > 0 && meetsTarget(T.apiCpuPerNewPayment, m.total),
  };
}

function boundRow({ api }: BenchFigures): Row {
  const target = `${targetText(T.newPaymentsOfBound)} of the bound`;
  if (!api) return { measure: 'new payments/s, closed loop', target, ...NOT_MEASURED };
  const pg = api.pgbenchSameStatement.perSecond;
  const bare = api.bareExpress.perSecond;
  const bound = newPaymentBound(pg, bare);
  const ratio = bound > 0 ? percent(api.newPayments.perSecond, bound) : 0;
  return {
    measure: `new payments/s, closed loop, concurrency ${api.settings.concurrency}`,
    value: `${perSecond(api.newPayments.perSecond)}; ${latencies(api.newPayments.latencyMs)}`,
    reference:
      `bound 1/(1/pgbench + 1/bare Express) = ${perSecond(bound)}: pgbench, same SQL and ` +
      `concurrency, ${perSecond(pg)}; bare Express ${perSecond(bare)}`,
    ratio: `${ratio}% of the bound (${percent(api.newPayments.perSecond, pg)}% of pgbench)`,
    target,
    pass: meetsTarget(T.newPaymentsOfBound, ratio),
  };
}

function pipelineCpuRow({ settleRuns, settleRate }: BenchFigures): Row {
  const measure = `whole-pipeline CPU per settled payment at ${settleRate}/s`;
  const target = `${targetText(T.pipelineCpuPerSettled)} (service processes, Postgres, Kafka, Redis)`;
  const cpu = pipelineCpuPerSettled(settleRuns);
  if (cpu.settled === 0) return { measure, target, ...NOT_MEASURED };
  return {
    measure: `${measure} (${cpu.runs} runs, ${cpu.settled.toLocaleString('en')} payments)`,
    value: describePipelineCpu(cpu),
    reference: '-',
    ratio: '-',
    target,
    pass: meetsTarget(T.pipelineCpuPerSettled, cpu.serviceTotal),
  };
}

function keepUpRow({ settleRuns }: BenchFigures): Row {
  const rate = keepUpRate(settleRuns);
  const top = highestRateOffered(settleRuns);
  return {
    measure:
      'pipeline keeps up: highest rate accepted in full with a flat settlement backlog (every slower step too)',
    value:
      rate === undefined
        ? 'none (the slowest step already fell behind)'
        : `${perSecond(rate)}${rate === top ? ' (the fastest step run: the limit is higher)' : ''}`,
    reference: `steps up to ${perSecond(top)}`,
    ratio: rate === undefined ? '-' : `${percent(rate, T.keepUpRate.figure)}% of the target`,
    target: targetText(T.keepUpRate),
    pass: rate !== undefined && meetsTarget(T.keepUpRate, rate),
  };
}

function settleP99Row({ settleRuns, settleRunsWanted, settleRate, api }: BenchFigures): Row {
  const held = settleRuns.map((run) => settledWithin(runVerdictInput(run), T.settleP99.figure));
  const each = settleRuns.map(
    (run, i) =>
      `run ${i + 1}: p99 ${ms(run.settle.p99)}${run.settle.unsettled ? `, ${run.settle.unsettled} unsettled` : ''}` +
      (held[i] ? '' : ' (missed)'),
  );
  const passed = held.filter(Boolean).length;
  return {
    measure: `accepted-to-settled p99 at ${settleRate}/s, zero-latency acquirer, ${settleRunsWanted} separate runs`,
    value: each.join('; ') || 'not measured',
    reference: `API p99 in the same runs: ${settleRuns.map((run) => ms(run.api.latencyMs.p99)).join(', ') || '-'}${api ? `; bench:api peak ${perSecond(api.newPayments.perSecond)}` : ''}`,
    ratio: `${passed}/${settleRunsWanted} runs`,
    target: `${targetText(T.settleP99)} in ${settleRunsWanted} runs of ${settleRunsWanted}`,
    pass: settleRuns.length >= settleRunsWanted && passed === settleRuns.length,
  };
}

function replayRow({ api }: BenchFigures): Row {
  const target = `${targetText(T.replaysOfBareExpress)} of bare Express`;
  if (!api) return { measure: 'replays (Redis hit), closed loop', target, ...NOT_MEASURED };
  const ratio = percent(api.replays.perSecond, api.bareExpress.perSecond);
  return {
    measure: 'replays (Redis hit), closed loop',
    value: `${perSecond(api.replays.perSecond)}; ${latencies(api.replays.latencyMs)}`,
    reference: `bare Express JSON endpoint: ${perSecond(api.bareExpress.perSecond)}; ${latencies(api.bareExpress.latencyMs)}`,
    ratio: `${ratio}%`,
    target,
    pass: meetsTarget(T.replaysOfBareExpress, ratio),
  };
}

function rssRow({ api, settleRuns }: BenchFigures): Row {
  const pipelineApi = settleRuns.map((run) => run.peakRssMb.api);
  const measuredApi = [...(api ? [api.apiPeakRssMb] : []), ...pipelineApi];
  const rss = Math.max(...measuredApi);
  const last = settleRuns.at(-1)?.peakRssMb;
  return {
    measure: 'API peak RSS (VmHWM), bench:api and every pipeline run',
    value: measuredApi.length ? `${rss} MB` : 'not measured',
    reference:
      `bench:api ${api?.apiPeakRssMb ?? '-'} MB; pipeline runs' api ${pipelineApi.join(', ') || '-'} MB` +
      (last
        ? ` (last run's others: ${Object.entries(last)
            .filter(([name]) => name !== 'api')
            .map(([name, mb]) => `${name} ${mb}`)
            .join(', ')} MB)`
        : ''),
    ratio: '-',
    target: targetText(T.apiPeakRss),
    pass: measuredApi.length > 0 && meetsTarget(T.apiPeakRss, rss),
  };
}

function tracingRow({ tracing }: BenchFigures): Row {
  const of = (variant: string) => tracing?.summary.find((s) => s.variant === variant);
  const sampled = of('sampled 10%');
  const untraced = of('untraced');
  const control = of('untraced again (A/A)');
  const measure = `tracing on, OTLP export, 10% sampled: CPU cost to new payments (${tracing?.settings.cycles ?? 0} interleaved cycles)`;
  const target = `${targetText(T.tracingCpuCost)} CPU`;
  if (!sampled) return { measure, target, ...NOT_MEASURED };
  return {
    measure,
    value: `CPU ${signedPercent(sampled.cpuCostPct)} (API ${sampled.apiCpuMsPerPayment} ms/payment); throughput ${sampled.throughputCostPct}% (middle half ${sampled.throughputCostIqrPct[0]}% to ${sampled.throughputCostIqrPct[1]}%)`,
    reference: `untraced API ${untraced?.apiCpuMsPerPayment ?? '-'} ms/payment; A/A control: CPU ${control?.cpuCostPct ?? '-'}%, throughput ${control?.throughputCostPct ?? '-'}%`,
    ratio: '-',
    target,
    pass: meetsTarget(T.tracingCpuCost, sampled.cpuCostPct),
  };
}

/** One row per target of BENCH_TARGETS, in its order, each met or not. */
export function targetRows(figures: BenchFigures): Row[] {
  return [
    apiCpuRow(figures),
    boundRow(figures),
    pipelineCpuRow(figures),
    keepUpRow(figures),
    settleP99Row(figures),
    replayRow(figures),
    rssRow(figures),
    tracingRow(figures),
  ];
}
