import type { BenchFigures, Row } from './part-reports.js';
import { describePipelineCpu, pipelineCpuPerSettled } from './pipeline-cpu.js';
import {
  highestRateOffered,
  keepUpRate,
  runVerdictInput,
  settledWithin,
} from './pipeline-steps.js';
import { cpuMs, latencies, ms, percent, perSecond, signedPercent } from './report-format.js';

/** Issue 29's "Done when", as figures. */
export const TARGETS = {
  apiCpuMsPerNewPayment: 0.55,
  newPaymentsOfBoundPct: 60,
  pipelineCpuMsPerSettled: 2.2,
  keepUpRate: 700,
  settleP99Ms: 250,
  replaysOfBareExpressPct: 70,
  apiPeakRssMb: 150,
  tracingCpuCostPct: 10,
} as const;

/**
 * The bound on new payments/s of an API that does both the SQL's work (pgbench) and the HTTP
 * work (bare Express) on the same machine: their costs per payment add up.
 */
export function newPaymentBound(pgbenchPerSecond: number, bareExpressPerSecond: number): number {
  if (pgbenchPerSecond <= 0 || bareExpressPerSecond <= 0) return 0;
  return 1 / (1 / pgbenchPerSecond + 1 / bareExpressPerSecond);
}

const NOT_MEASURED = { value: 'not measured', reference: '-', ratio: '-', pass: false };

function apiCpuRow({ api }: BenchFigures): Row {
  const measure = 'API + Postgres + Redis CPU per new payment (bench:api, closed loop)';
  const target = `<= ${TARGETS.apiCpuMsPerNewPayment} ms`;
  const cpu = api?.newPaymentsCpu;
  if (!api || !cpu) return { measure, target, ...NOT_MEASURED };
  const { msPerPayment: m } = cpu;
  return {
    measure: `${measure}, concurrency ${api.settings.concurrency}`,
    value: `${cpuMs(m.total)} (api ${m.api}, Postgres ${m.postgres}, Redis ${m.redis})`,
    reference: `${cpu.payments.toLocaleString('en')} payments at ${perSecond(api.newPayments.perSecond)}`,
    ratio: '-',
    target,
    pass: cpu.payments > 0 && m.total <= TARGETS.apiCpuMsPerNewPayment,
  };
}

function boundRow({ api }: BenchFigures): Row {
  const target = `>= ${TARGETS.newPaymentsOfBoundPct}% of the bound`;
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
    pass: ratio >= TARGETS.newPaymentsOfBoundPct,
  };
}

function pipelineCpuRow({ settleRuns, settleRate }: BenchFigures): Row {
  const measure = `whole-pipeline CPU per settled payment at ${settleRate}/s`;
  const target = `<= ${TARGETS.pipelineCpuMsPerSettled} ms (service processes, Postgres, Kafka, Redis)`;
  const cpu = pipelineCpuPerSettled(settleRuns);
  if (cpu.settled === 0) return { measure, target, ...NOT_MEASURED };
  return {
    measure: `${measure} (${cpu.runs} runs, ${cpu.settled.toLocaleString('en')} payments)`,
    value: describePipelineCpu(cpu),
    reference: '-',
    ratio: '-',
    target,
    pass: cpu.serviceTotal <= TARGETS.pipelineCpuMsPerSettled,
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
    ratio: rate === undefined ? '-' : `${percent(rate, TARGETS.keepUpRate)}% of the target`,
    target: `>= ${TARGETS.keepUpRate}/s`,
    pass: rate !== undefined && rate >= TARGETS.keepUpRate,
  };
}

function settleP99Row({ settleRuns, settleRunsWanted, settleRate, api }: BenchFigures): Row {
  const held = settleRuns.map((run) => settledWithin(runVerdictInput(run), TARGETS.settleP99Ms));
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
    target: `<= ${TARGETS.settleP99Ms} ms in ${settleRunsWanted} runs of ${settleRunsWanted}`,
    pass: settleRuns.length >= settleRunsWanted && passed === settleRuns.length,
  };
}

function replayRow({ api }: BenchFigures): Row {
  const target = `>= ${TARGETS.replaysOfBareExpressPct}% of bare Express`;
  if (!api) return { measure: 'replays (Redis hit), closed loop', target, ...NOT_MEASURED };
  const ratio = percent(api.replays.perSecond, api.bareExpress.perSecond);
  return {
    measure: 'replays (Redis hit), closed loop',
    value: `${perSecond(api.replays.perSecond)}; ${latencies(api.replays.latencyMs)}`,
    reference: `bare Express JSON endpoint: ${perSecond(api.bareExpress.perSecond)}; ${latencies(api.bareExpress.latencyMs)}`,
    ratio: `${ratio}%`,
    target,
    pass: ratio >= TARGETS.replaysOfBareExpressPct,
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
    target: `<= ${TARGETS.apiPeakRssMb} MB`,
    pass: measuredApi.length > 0 && rss <= TARGETS.apiPeakRssMb,
  };
}

function tracingRow({ tracing }: BenchFigures): Row {
  const of = (variant: string) => tracing?.summary.find((s) => s.variant === variant);
  const sampled = of('sampled 10%');
  const untraced = of('untraced');
  const control = of('untraced again (A/A)');
  const measure = `tracing on, OTLP export, 10% sampled: CPU cost to new payments (${tracing?.settings.cycles ?? 0} interleaved cycles)`;
  const target = `< ${TARGETS.tracingCpuCostPct}% CPU`;
  if (!sampled) return { measure, target, ...NOT_MEASURED };
  return {
    measure,
    value: `CPU ${signedPercent(sampled.cpuCostPct)} (API ${sampled.apiCpuMsPerPayment} ms/payment); throughput ${sampled.throughputCostPct}% (middle half ${sampled.throughputCostIqrPct[0]}% to ${sampled.throughputCostIqrPct[1]}%)`,
    reference: `untraced API ${untraced?.apiCpuMsPerPayment ?? '-'} ms/payment; A/A control: CPU ${control?.cpuCostPct ?? '-'}%, throughput ${control?.throughputCostPct ?? '-'}%`,
    ratio: '-',
    target,
    pass: sampled.cpuCostPct < TARGETS.tracingCpuCostPct,
  };
}

/** Issue 29's eight targets, in its order, each met or not. */
export function issueTargetRows(figures: BenchFigures): Row[] {
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
