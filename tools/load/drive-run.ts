import { writeFileSync } from 'node:fs';
import type { Env } from '../../k6/scenarios/settings.js';
import { baseUrls } from '../../k6/scenarios/settings.js';
import type { Scenario } from '../../k6/scenarios/shape.js';
import { httpTransport } from './http-transport.js';
import { LoadMetrics } from './load-metrics.js';
import { loadSummary, type LoadSummary } from './load-summary.js';
import { requestSampleWriter } from './request-samples.js';
import { runScenario } from './run-scenario.js';
import { judgeThresholds } from './thresholds.js';

/** How long a request may take before it counts as unanswered (k6's default timeout). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * One run of a scenario on the driver: requests on undici, every threshold judged as k6 would,
 * the summary written to `summaryFile` (and every request to `samplesFile` when given).
 */
export async function driveRun(options: {
  name: string;
  scenario: Scenario<unknown, unknown>;
  env: Env;
  runId: string;
  summaryFile: string;
  samplesFile?: string;
  stop: AbortSignal;
  log: (line: string) => void;
}): Promise<LoadSummary> {
  const { scenario, env } = options;
  const timeoutMs = Number(env.REQUEST_TIMEOUT_MS ?? DEFAULT_REQUEST_TIMEOUT_MS);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new Error('REQUEST_TIMEOUT_MS must be a positive integer (milliseconds)');
  }
  const metrics = new LoadMetrics();
  const samples = options.samplesFile ? requestSampleWriter(options.samplesFile) : null;
  const transport = httpTransport(baseUrls(env), {
    timeoutMs,
    onSample: (sample) => {
      metrics.request(sample.name, sample.durationMs);
      samples?.write(sample);
    },
  });
  let errors = 0;
  const startedAt = new Date();
  const cpuAtStart = process.cpuUsage();
  try {
    const outcome = await runScenario({
      scenario,
      env,
      runId: options.runId,
      transport,
      metrics,
      stop: options.stop,
      onError: (error) => {
        errors++;
        if (errors <= 5) {
          options.log(
            `iteration threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          );
        }
      },
    });
    const summary = loadSummary({
      scenario: options.name,
      runId: options.runId,
      startedAt,
      outcome,
      thresholds: judgeThresholds(scenario.thresholds(scenario.settings(env)), metrics),
      metrics,
      errors,
      cpu: process.cpuUsage(cpuAtStart),
    });
    writeFileSync(options.summaryFile, `${JSON.stringify(summary, null, 2)}\n`);
    return summary;
  } finally {
    await transport.close();
    await samples?.close();
  }
}
