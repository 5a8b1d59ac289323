// The two shapes of load the scripts use, with their settings read from the environment.
import { Counter } from 'k6/metrics';
import { intEnv, stringEnv } from './env.js';

/** Trend statistics in every summary: the percentiles the objectives are written in. */
export const SUMMARY_TREND_STATS = ['avg', 'med', 'p(95)', 'p(99)', 'max'];

/**
 * One iteration per key, `keys` in all, shared by VUS virtual users, bounded by MAX_DURATION:
 * for the invariant scripts, where each iteration is one key's whole story.
 */
export function perKey(keys, defaults) {
  return {
    executor: 'shared-iterations',
    vus: intEnv('VUS', defaults.vus),
    iterations: keys,
    maxDuration: stringEnv('MAX_DURATION', defaults.maxDuration),
  };
}

/**
 * Open model: RATE iterations per second for DURATION whatever the answers do, so a slow
 * server shows up as latency (and dropped_iterations), not as a lower request rate.
 */
export function arrivalRate(defaults) {
  const vus = intEnv('VUS', 50);
  return {
    executor: 'constant-arrival-rate',
    rate: intEnv('RATE', defaults.rate),
    timeUnit: '1s',
    duration: stringEnv('DURATION', defaults.duration),
    preAllocatedVUs: vus,
    maxVUs: 4 * vus,
  };
}

/** Thresholds every script shares: no 5xx or network error, every request answered. */
export const NO_SERVER_ERRORS = {
  server_errors: ['count==0'],
  unresolved_requests: ['count==0'],
};

/** http_req_duration thresholds for requests named `name`, from P95_MS / P99_MS. */
export function latency(name, defaults) {
  const limits = [];
  if (defaults.p95 !== undefined) limits.push(`p(95)<${intEnv('P95_MS', defaults.p95)}`);
  limits.push(`p(99)<${intEnv('P99_MS', defaults.p99)}`);
  return { [`http_req_duration{name:${name}}`]: limits };
}

/**
 * Counters of broken invariants, each with the threshold `count==0`: a single occurrence fails
 * the run (k6 exits 99). Returns the counters by name and the thresholds to spread in.
 */
export function invariants(names) {
  const broken = {};
  const thresholds = {};
  for (const name of names) {
    broken[name] = new Counter(name);
    thresholds[name] = ['count==0'];
  }
  return { broken, thresholds };
}

/**
 * Everything an invariant script declares: one iteration per key (`keys` in all), `batch`
 * requests of a key sent at once, the `<name>_keys` counter that must reach `keys` (a run cut
 * short by MAX_DURATION fails), the invariant counters (each must stay 0), no 5xx, and the
 * latency objectives of POST /payments.
 */
export function keyedTest({ name, keys, batch, vus, maxDuration, invariantNames, objectives }) {
  const keysDone = new Counter(`${name}_keys`);
  const { broken, thresholds } = invariants(invariantNames);
  return {
    keysDone,
    broken,
    options: {
      scenarios: { [name]: perKey(keys, { vus, maxDuration }) },
      // All requests of a key leave together: k6 would otherwise send at most 6 per host at once.
      batch,
      batchPerHost: batch,
      thresholds: {
        ...thresholds,
        ...NO_SERVER_ERRORS,
        [`${name}_keys`]: [`count==${keys}`],
        ...latency('POST /payments', objectives),
      },
      summaryTrendStats: SUMMARY_TREND_STATS,
    },
  };
}
