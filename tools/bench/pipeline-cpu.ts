import type { PipelineResult } from './measure-pipeline.js';

/**
 * Measured in the pipeline runs but not the service's: the acquirer simulator (an acquirer is
 * someone else's machine; its own process once measure-pipeline reports it as `acquirer`) and
 * the load generator (the bench itself).
 */
export const OUTSIDE_THE_SERVICE = ['acquirer', 'load generator'] as const;

export interface PipelineCpu {
  runs: number;
  /** Payments settled in the measured runs together. */
  settled: number;
  /** Each process's CPU ms per settled payment, over all runs (their CPU seconds / settled). */
  msPerSettled: Record<string, number>;
  /** The sum over the service's processes and its Postgres, Kafka and Redis. */
  serviceTotal: number;
  /** The service total of each run alone (how much the runs agree). */
  perRunServiceTotal: number[];
  /** Whether the acquirer simulator ran as a process of its own (else its CPU is settlement's). */
  acquirerApart: boolean;
}

const outside = (part: string) => (OUTSIDE_THE_SERVICE as readonly string[]).includes(part);
const round3 = (value: number) => Math.round(value * 1000) / 1000;

/** CPU per settled payment of the fixed-rate runs (each from its first request to all settled). */
export function pipelineCpuPerSettled(runs: readonly PipelineResult[]): PipelineCpu {
  const settled = runs.reduce((sum, run) => sum + run.settle.payments, 0);
  const seconds: Record<string, number> = {};
  for (const run of runs) {
    for (const [part, value] of Object.entries(run.cpuSeconds)) {
      seconds[part] = (seconds[part] ?? 0) + value;
    }
  }
  const per = (value: number, payments: number) =>
    payments > 0 ? round3((value * 1000) / payments) : 0;
  const msPerSettled = Object.fromEntries(
    Object.entries(seconds).map(([part, value]) => [part, per(value, settled)]),
  );
  const serviceSeconds = (cpu: Record<string, number>) =>
    Object.entries(cpu)
      .filter(([part]) => !outside(part))
      .reduce((sum, [, value]) => sum + value, 0);
  return {
    runs: runs.length,
    settled,
    msPerSettled,
    serviceTotal: per(serviceSeconds(seconds), settled),
    perRunServiceTotal: runs.map((run) => per(serviceSeconds(run.cpuSeconds), run.settle.payments)),
    acquirerApart: 'acquirer' in seconds,
  };
}

/** "api 0.8, relay 0.4, ... = 2.1 ms; apart: acquirer 0.1, load generator 0.2". */
export function describePipelineCpu(cpu: PipelineCpu): string {
  const parts = Object.entries(cpu.msPerSettled);
  const inService = parts.filter(([part]) => !outside(part));
  const apart = parts.filter(([part]) => outside(part));
  const list = (entries: [string, number][]) =>
    entries.map(([part, value]) => `${part} ${value}`).join(', ');
  return (
    `${list(inService)} = ${cpu.serviceTotal} ms per settled payment` +
    (cpu.runs > 1 ? ` (runs alone: ${cpu.perRunServiceTotal.join(', ')})` : '') +
    `; not the service's: ${list(apart) || 'none measured'}` +
    (cpu.acquirerApart
      ? ''
      : " (the acquirer simulator ran inside settlement: its CPU is in settlement's figure)")
  );
}

/**
 * Where the pipeline's CPU goes: a markdown table of each process's CPU ms per settled payment
 * in each fixed-rate run and over all of them, and its share of the service's total.
 */
export function pipelineCpuTable(runs: readonly PipelineResult[]): string {
  const all = pipelineCpuPerSettled(runs);
  const each = runs.map((run) => pipelineCpuPerSettled([run]));
  const share = (value: number) =>
    all.serviceTotal > 0 ? `${Math.round((value / all.serviceTotal) * 1000) / 10}%` : '-';
  const row = (part: string, pick: (cpu: PipelineCpu) => number | undefined, counted: boolean) =>
    `| ${part} | ${each.map((cpu) => pick(cpu) ?? '-').join(' | ')} | ${pick(all) ?? '-'} | ${counted ? share(pick(all) ?? 0) : 'not summed'} |`;
  const parts = Object.keys(all.msPerSettled);
  return [
    `| process | ${runs.map((_, i) => `run ${i + 1}`).join(' | ')} | all runs | share of the service's total |`,
    `|---|${runs.map(() => '---|').join('')}---|---|`,
    ...parts
      .filter((part) => !outside(part))
      .map((part) => row(part, (cpu) => cpu.msPerSettled[part], true)),
    row('**service total**', (cpu) => cpu.serviceTotal, true),
    ...parts
      .filter((part) => outside(part))
      .map((part) => row(`${part} (apart)`, (cpu) => cpu.msPerSettled[part], false)),
  ].join('\n');
}
