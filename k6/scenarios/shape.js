// @ts-check
// What a scenario is, for both engines: its settings, how its iterations are scheduled, the
// counters it declares and the thresholds that judge it, in k6's threshold syntax (the load
// driver evaluates the same strings: tools/load/thresholds.ts).

import { durationSetting, intSetting } from './settings.js';

/** @typedef {import('./careful-client.js').Step} Step */
/** @typedef {import('./careful-client.js').Tally} Tally */
/** @typedef {import('./careful-client.js').Answer} Answer */
/** @typedef {import('./settings.js').Env} Env */

/**
 * One iteration per key, `iterations` in all, shared by `vus` workers, bounded by `maxDuration`:
 * for the invariant scenarios, where each iteration is one key's whole story.
 * @typedef {{ kind: 'per-key', iterations: number, vus: number, maxDuration: string }} PerKey
 */
/**
 * Open model: `rate` iterations per second for `duration` whatever the answers do, at most
 * `maxVus` at once (an arrival with none free is dropped and counted: dropped_iterations).
 * @typedef {{ kind: 'arrival-rate', rate: number, duration: string, vus: number, maxVus: number }} ArrivalRate
 */
/** @typedef {PerKey | ArrivalRate} Executor */

/**
 * @template S, D
 * @typedef {object} IterationContext
 * @property {number} n  this iteration's number in the whole run
 * @property {string} runId  the prefix of every Idempotency-Key of the run
 * @property {string[]} apiKeys
 * @property {S} settings
 * @property {D} data  what setup returned
 * @property {Tally} tally
 */

/**
 * @template S, D
 * @typedef {object} Scenario
 * @property {string} name  the k6 scenario's name
 * @property {number} minimumKeys  API keys it needs
 * @property {(env: Env) => S} settings
 * @property {(settings: S) => Executor} executor
 * @property {(settings: S) => number} batch  requests one iteration sends at once (k6's batch)
 * @property {string[]} counters  every counter it adds to (k6 declares them before the run)
 * @property {(settings: S) => Record<string, string[]>} thresholds
 * @property {(ctx: Omit<IterationContext<S, D>, 'n' | 'data'>) => Generator<Step, D, Answer[]>} setup
 * @property {(ctx: IterationContext<S, D>) => Generator<Step, void, Answer[]>} iteration
 */

/** Trend statistics every summary shows: the percentiles the objectives are written in. */
export const SUMMARY_TREND_STATS = ['avg', 'med', 'p(95)', 'p(99)', 'max'];

/** @returns {PerKey} */
export function perKey(
  /** @type {number} */ iterations,
  /** @type {number} */ vus,
  /** @type {string} */ maxDuration,
) {
  return { kind: 'per-key', iterations, vus: Math.max(1, vus), maxDuration };
}

/** @returns {ArrivalRate} */
export function arrivalRate(
  /** @type {number} */ rate,
  /** @type {string} */ duration,
  /** @type {number} */ vus,
) {
  return {
    kind: 'arrival-rate',
    rate,
    duration,
    vus: Math.max(1, vus),
    maxVus: 4 * Math.max(1, vus),
  };
}

/** Thresholds every scenario shares: no 5xx or missing answer, every request answered. */
export const NO_SERVER_ERRORS = {
  server_errors: ['count==0'],
  unresolved_requests: ['count==0'],
};

/** Latency thresholds of the requests named `name`. */
export function latency(
  /** @type {string} */ name,
  /** @type {{ p95?: number, p99: number }} */ limits,
) {
  /** @type {string[]} */
  const rules = [];
  if (limits.p95 !== undefined) rules.push(`p(95)<${limits.p95}`);
  rules.push(`p(99)<${limits.p99}`);
  return { [`http_req_duration{name:${name}}`]: rules };
}

/** `count==0` for each counter of a broken invariant. */
export function noneOf(/** @type {readonly string[]} */ names) {
  /** @type {Record<string, string[]>} */
  const thresholds = {};
  for (const name of names) thresholds[name] = ['count==0'];
  return thresholds;
}

/**
 * A setup that only returns an empty object, for scenarios that need none.
 * @returns {Generator<Step, {}, Answer[]>}
 */
// eslint-disable-next-line require-yield
export function* noSetup() {
  return {};
}

/**
 * @typedef {object} RaceSettings
 * @property {number} keys
 * @property {number} copies
 * @property {number} vus
 * @property {string} maxDuration
 * @property {number} maxAttempts
 * @property {number | undefined} p95
 * @property {number} p99
 */

/**
 * The settings of a per-key race (KEYS, COPIES, VUS, MAX_DURATION, MAX_ATTEMPTS, P95_MS, P99_MS)
 * with a scenario's defaults; P95_MS only where the scenario has a p95 objective.
 * @returns {RaceSettings}
 */
export function raceSettings(
  /** @type {import('./settings.js').Env} */ env,
  /** @type {{ keys: number, copies: number, vus: number, maxDuration: string, p95?: number, p99: number }} */ defaults,
) {
  return {
    keys: intSetting(env, 'KEYS', defaults.keys),
    copies: Math.max(1, intSetting(env, 'COPIES', defaults.copies)),
    vus: intSetting(env, 'VUS', defaults.vus),
    maxDuration: durationSetting(env, 'MAX_DURATION', defaults.maxDuration),
    maxAttempts: Math.max(1, intSetting(env, 'MAX_ATTEMPTS', 10)),
    p95: defaults.p95 === undefined ? undefined : intSetting(env, 'P95_MS', defaults.p95),
    p99: intSetting(env, 'P99_MS', defaults.p99),
  };
}

/**
 * The thresholds of a per-key race: every invariant counter 0, no 5xx, `done` counting every key
 * (a run cut short by MAX_DURATION fails), and the latency objectives of `name`'s requests.
 */
export function raceThresholds(
  /** @type {string} */ done,
  /** @type {readonly string[]} */ invariantNames,
  /** @type {{ keys: number, p95?: number | undefined, p99: number }} */ settings,
  /** @type {string} */ name,
) {
  return {
    ...noneOf(invariantNames),
    ...NO_SERVER_ERRORS,
    [done]: [`count==${settings.keys}`],
    ...latency(name, settings),
  };
}

/**
 * @typedef {object} PaymentStormSettings
 * @property {number} payments
 * @property {number} copies
 * @property {number} vus
 * @property {string} maxDuration
 * @property {number} settleWaitSeconds
 * @property {number} maxAttempts
 * @property {number} p95
 * @property {number} p99
 */

/**
 * The settings of a storm on payments that must first reach a state (refund-storm,
 * capture-race): PAYMENTS, COPIES, VUS, MAX_DURATION (10m), SETTLE_WAIT_S (30), MAX_ATTEMPTS
 * (10), P95_MS, P99_MS, with a scenario's defaults.
 * @returns {PaymentStormSettings}
 */
export function paymentStormSettings(
  /** @type {import('./settings.js').Env} */ env,
  /** @type {{ payments: number, copies: number, vus: number, p95: number, p99: number }} */ defaults,
) {
  return {
    payments: intSetting(env, 'PAYMENTS', defaults.payments),
    copies: Math.max(1, intSetting(env, 'COPIES', defaults.copies)),
    vus: intSetting(env, 'VUS', defaults.vus),
    maxDuration: durationSetting(env, 'MAX_DURATION', '10m'),
    settleWaitSeconds: intSetting(env, 'SETTLE_WAIT_S', 30),
    maxAttempts: Math.max(1, intSetting(env, 'MAX_ATTEMPTS', 10)),
    p95: intSetting(env, 'P95_MS', defaults.p95),
    p99: intSetting(env, 'P99_MS', defaults.p99),
  };
}
