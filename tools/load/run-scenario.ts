import { setTimeout as sleep } from 'node:timers/promises';
import type { Tally } from '../../k6/scenarios/careful-client.js';
import { apiKeys, durationSeconds, type Env } from '../../k6/scenarios/settings.js';
import type { ArrivalRate, PerKey, Scenario } from '../../k6/scenarios/shape.js';
import { driveSteps, Stopped } from './drive-steps.js';
import type { LoadMetrics } from './load-metrics.js';
import type { Transport } from './http-transport.js';

/** How long iterations still running when an arrival-rate run's duration ends may finish. */
export const GRACEFUL_STOP_MS = 30_000;

export interface ScenarioRun {
  scenario: Scenario<unknown, unknown>;
  env: Env;
  runId: string;
  transport: Transport;
  metrics: LoadMetrics;
  /** Aborted to end the run early (SIGINT): iterations in flight are cut short, not judged. */
  stop: AbortSignal;
  /** An iteration that threw (a bug in a scenario, not an answer): reported, the run fails. */
  onError: (error: unknown) => void;
}

/** What happened: how long the run took and whether it was cut short. */
export interface ScenarioOutcome {
  seconds: number;
  interrupted: boolean;
  /** The executor ran out of time (MAX_DURATION) before its iterations were done. */
  timedOut: boolean;
}

/**
 * Runs `scenario` as k6 would: its setup once, then its iterations by its executor (a shared
 * pool of iterations over VUS workers, or a constant arrival rate), every request through
 * `transport`, every count into `metrics`.
 */
export async function runScenario(run: ScenarioRun): Promise<ScenarioOutcome> {
  const { scenario, env, metrics } = run;
  const settings = scenario.settings(env);
  const keys = apiKeys(env, scenario.minimumKeys);
  for (const name of scenario.counters) metrics.declare(name);
  const tally: Tally = {
    add: (name, value, tags) => {
      metrics.add(name, value, tags);
    },
    check: (name, ok) => {
      metrics.check(name, ok);
    },
  };
  const started = performance.now();
  const data = await driveSteps(
    scenario.setup({ runId: run.runId, apiKeys: keys, settings, tally }),
    run.transport,
    run.stop,
  );
  const iterate = async (n: number, stop: AbortSignal): Promise<void> => {
    try {
      await driveSteps(
        scenario.iteration({ n, runId: run.runId, apiKeys: keys, settings, data, tally }),
        run.transport,
        stop,
      );
      metrics.iterations++;
    } catch (error) {
      if (error instanceof Stopped) metrics.interruptedIterations++;
      else run.onError(error);
    }
  };
  const executor = scenario.executor(settings);
  const timedOut =
    executor.kind === 'per-key'
      ? await perKey(executor, iterate, run.stop)
      : await arrivalRate(executor, iterate, run.stop, metrics);
  return {
    seconds: (performance.now() - started) / 1000,
    interrupted: run.stop.aborted,
    timedOut,
  };
}

type Iterate = (n: number, stop: AbortSignal) => Promise<void>;

/**
 * `vus` workers take the next iteration number until `iterations` were started; at
 * `maxDuration` the iterations in flight are cut short (k6's shared-iterations). True when the
 * time ran out first.
 */
async function perKey(executor: PerKey, iterate: Iterate, stop: AbortSignal): Promise<boolean> {
  const deadline = new AbortController();
  const timer = setTimeout(
    () => {
      deadline.abort();
    },
    durationSeconds(executor.maxDuration) * 1000,
  );
  const signal = AbortSignal.any([stop, deadline.signal]);
  let next = 0;
  const worker = async () => {
    while (!signal.aborted && next < executor.iterations) await iterate(next++, signal);
  };
  try {
    await Promise.all(Array.from({ length: executor.vus }, worker));
  } finally {
    clearTimeout(timer);
  }
  return deadline.signal.aborted && !stop.aborted;
}

/**
 * Starts an iteration every 1/rate s for `duration`, whatever the answers do (an open model),
 * with at most `maxVus` in flight: an arrival with none free is dropped and counted. When the
 * duration ends, iterations in flight get GRACEFUL_STOP_MS to finish (k6's gracefulStop).
 */
async function arrivalRate(
  executor: ArrivalRate,
  iterate: Iterate,
  stop: AbortSignal,
  metrics: LoadMetrics,
): Promise<boolean> {
  const total = Math.floor(executor.rate * durationSeconds(executor.duration));
  const intervalMs = executor.rate > 0 ? 1_000 / executor.rate : Infinity;
  const grace = new AbortController();
  const signal = AbortSignal.any([stop, grace.signal]);
  const running = new Set<Promise<void>>();
  const started = performance.now();
  let n = 0;
  for (let arrival = 0; arrival < total && !stop.aborted; arrival++) {
    const wait = started + arrival * intervalMs - performance.now();
    if (wait > 1 && !(await pause(wait, stop))) break;
    if (running.size >= executor.maxVus) {
      metrics.droppedIterations++;
      continue;
    }
    const iteration = iterate(n++, signal).finally(() => running.delete(iteration));
    running.add(iteration);
  }
  const timer = setTimeout(() => {
    grace.abort();
  }, GRACEFUL_STOP_MS);
  try {
    await Promise.all(running);
  } finally {
    clearTimeout(timer);
  }
  return grace.signal.aborted && !stop.aborted;
}

/** Waits `ms`; false when `stop` ended the wait. */
async function pause(ms: number, stop: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal: stop });
    return true;
  } catch {
    return false;
  }
}
