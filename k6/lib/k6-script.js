// @ts-check
// Runs a scenario of k6/scenarios/ under k6: the same scenario code the project's load driver
// runs (tools/load), with k6's http.batch and sleep as its steps and k6's metrics as its tally.
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter } from 'k6/metrics';
import { apiKeys, baseUrls, runId } from '../scenarios/settings.js';
import { SUMMARY_TREND_STATS } from '../scenarios/shape.js';

/** @typedef {import('../scenarios/careful-client.js').Answer} Answer */
/** @typedef {import('../scenarios/careful-client.js').Request} Request */
/** @typedef {import('../scenarios/careful-client.js').Step} Step */
/** @typedef {import('../scenarios/careful-client.js').Tally} Tally */
/** @typedef {import('../scenarios/shape.js').Executor} Executor */

/** k6's form of an executor. */
function k6Executor(/** @type {Executor} */ executor) {
  if (executor.kind === 'per-key') {
    return {
      executor: 'shared-iterations',
      vus: executor.vus,
      iterations: executor.iterations,
      maxDuration: executor.maxDuration,
    };
  }
  return {
    executor: 'constant-arrival-rate',
    rate: executor.rate,
    timeUnit: '1s',
    duration: executor.duration,
    preAllocatedVUs: executor.vus,
    maxVUs: executor.maxVus,
  };
}

/** What k6 answered, as a scenario reads it. */
function answerOf(/** @type {import('k6/http').Response} */ response) {
  /** @type {Answer} */
  const answer = {
    status: response.status,
    body: typeof response.body === 'string' ? response.body : '',
    retryAfter: response.headers['Retry-After'] ?? null,
    replayed: response.headers['Idempotent-Replayed'] === 'true',
    error: response.error,
  };
  return answer;
}

/**
 * Runs a scenario's generator to its end, synchronously: each http step is one http.batch, each
 * sleep step k6's sleep.
 * @template T
 * @param {Generator<Step, T, Answer[]>} steps
 * @param {readonly string[]} urls
 * @returns {T}
 */
function drive(steps, urls) {
  let step = steps.next([]);
  while (!step.done) {
    const action = step.value;
    if (action.kind === 'sleep') {
      sleep(action.seconds);
      step = steps.next([]);
      continue;
    }
    /** @type {import('k6/http').BatchRequest[]} */
    const batch = action.requests.map((/** @type {Request} */ request) => ({
      method: request.method,
      url: `${urls[request.target % urls.length]}${request.path}`,
      body: request.body ?? null,
      params: { headers: request.headers, tags: { name: request.name } },
    }));
    const responses = batch.length === 0 ? [] : http.batch(batch);
    step = steps.next(responses.map(answerOf));
  }
  return step.value;
}

/**
 * The options, setup and default function of a k6 script running `scenario`.
 * @template S, D
 * @param {import('../scenarios/shape.js').Scenario<S, D>} scenario
 */
export function k6Script(scenario) {
  const env = __ENV;
  const settings = scenario.settings(env);
  const urls = baseUrls(env);
  /** @type {Record<string, Counter>} */
  const counters = {};
  for (const name of scenario.counters) counters[name] = new Counter(name);
  /** @type {Tally} */
  const tally = {
    add: (metric, value = 1, tags) => {
      const counter = counters[metric];
      if (!counter) throw new Error(`${scenario.name}: counter ${metric} is not declared`);
      counter.add(value, tags);
    },
    check: (name, ok) => {
      check(ok, { [name]: (value) => value === true });
    },
  };
  const batch = scenario.batch(settings);
  const options = {
    scenarios: { [scenario.name]: k6Executor(scenario.executor(settings)) },
    thresholds: scenario.thresholds(settings),
    summaryTrendStats: SUMMARY_TREND_STATS,
    batch,
    batchPerHost: batch,
    setupTimeout: '300s',
  };
  return {
    options,
    setup() {
      const keys = apiKeys(env, scenario.minimumKeys);
      const id = runId(env, scenario.name, 'k6');
      const data = drive(scenario.setup({ runId: id, apiKeys: keys, settings, tally }), urls);
      return { runId: id, data };
    },
    iteration(/** @type {{ runId: string, data: D }} */ run) {
      const keys = apiKeys(env, scenario.minimumKeys);
      const n = exec.scenario.iterationInTest;
      const steps = scenario.iteration({
        n,
        runId: run.runId,
        apiKeys: keys,
        settings,
        data: run.data,
        tally,
      });
      drive(steps, urls);
    },
  };
}
