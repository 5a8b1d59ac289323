import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../src/platform/config/config.js';
import type { Logger } from '../../src/platform/telemetry/logger.js';
import { ROOT } from './bench-process.js';
import { measurePipeline } from './measure-pipeline.js';
import { describePipelineCpu, pipelineCpuPerSettled } from './pipeline-cpu.js';
import { ms } from './report-format.js';
import { backlogCell } from './report-tables.js';

export interface PipelineOnlySettings {
  rate: number;
  seconds: number;
  warmUpSeconds: number;
  started: Date;
  loadAverageBefore: number[];
}

/**
 * `npm run bench -- --pipeline-only`: the fixed-rate pipeline run alone, summed up per run for
 * A/B comparisons of two builds. Settled/s is what settled while the load ran: accepted minus the
 * backlog left at its end (the warm-up drained it before). CPU per settled payment is each
 * process's CPU seconds over the run (until everything settled) divided by the payments it
 * settled.
 */
export async function pipelineOnly(
  config: Config,
  logger: Logger,
  settings: PipelineOnlySettings,
  say: (line: string) => void,
): Promise<void> {
  const { rate, seconds, started } = settings;
  const pipeline = await measurePipeline(
    config,
    {
      settleRate: rate,
      settleSeconds: seconds,
      warmUpSeconds: settings.warmUpSeconds,
      sweepRates: [],
      sweepSeconds: 0,
      drainTimeoutMs: 120_000,
    },
    logger,
    say,
  );
  const accepted = pipeline.api.statuses['202'] ?? 0;
  const settledDuringLoad = accepted - pipeline.backlog.last;
  const cpu = pipelineCpuPerSettled([pipeline]);
  const summary = {
    date: started.toISOString(),
    loadAverageBefore: settings.loadAverageBefore,
    rate,
    seconds,
    achievedPerSecond: Math.round(pipeline.api.perSecond * 10) / 10,
    accepted,
    settledPerSecond: Math.round((settledDuringLoad / pipeline.api.seconds) * 10) / 10,
    settled: pipeline.settle.payments,
    unsettled: pipeline.settle.unsettled,
    settleP50Ms: pipeline.settle.p50,
    settleP99Ms: pipeline.settle.p99,
    backlog: pipeline.backlog,
    cpuMsPerSettled: cpu.msPerSettled,
    serviceCpuMsPerSettled: cpu.serviceTotal,
    cpuSeconds: pipeline.cpuSeconds,
    wallSeconds: pipeline.wallSeconds,
    stages: pipeline.settle.stages,
  };
  const stamp = started.toISOString().replaceAll(':', '-').slice(0, 19);
  const file = path.join(ROOT, 'reports', `bench-pipeline-${stamp}.json`);
  await writeFile(file, JSON.stringify({ summary, pipeline }, null, 2));
  say(
    `${rate}/s: achieved ${summary.achievedPerSecond}/s, settled ${summary.settledPerSecond}/s, ` +
      `p50 ${ms(summary.settleP50Ms)}, p99 ${ms(summary.settleP99Ms)}, backlog ${backlogCell(summary.backlog)}, ` +
      `CPU ms/settled ${describePipelineCpu(cpu)}`,
  );
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.stdout.write(`report: ${path.relative(ROOT, file)}\n`);
}
