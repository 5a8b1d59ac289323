// Settings of every k6 script, from the environment (`k6 run -e NAME=value` or exported).
// Sizes have defaults small enough for a laptop; docs/development.md lists what each script reads.

export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:3000').replace(/\/$/, '');

/**
 * Several API processes, comma-separated (BASE_URLS wins over BASE_URL): request i of an
 * iteration goes to instance i, and a retry goes to the next instance, as a client behind a
 * load balancer would see it. `npm run chaos` sets it.
 */
export const BASE_URLS = (__ENV.BASE_URLS || BASE_URL)
  .split(',')
  .map((url) => url.trim().replace(/\/$/, ''))
  .filter((url) => url !== '');

/** API keys of the merchants to use, comma-separated (`npm run merchant:create` prints one). */
export function apiKeys(minimum = 1) {
  const keys = (__ENV.API_KEYS || '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '');
  if (keys.length < minimum) {
    throw new Error(
      `API_KEYS must list at least ${minimum} API key(s), comma-separated ` +
        '(create them with: npm run merchant:create -- --name <name>)',
    );
  }
  return keys;
}

export function intEnv(name, fallback) {
  const raw = __ENV[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be an integer >= 0`);
  return value;
}

export function stringEnv(name, fallback) {
  const raw = __ENV[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

/**
 * The prefix of every Idempotency-Key a run sends, so `npm run verify -- --key-prefix <RUN_ID>`
 * judges exactly this run. Fixed in the init context of every VU alike, so it comes from the
 * environment; without one, each run makes its own from the start time in setup().
 */
export function runId(scenario) {
  const given = __ENV.RUN_ID;
  if (given !== undefined && given !== '') {
    if (!/^[\x21-\x7e]{1,180}$/.test(given)) throw new Error('RUN_ID must be 1-180 visible ASCII');
    return given;
  }
  return `k6-${scenario}-${Date.now().toString(36)}`;
}

/** setup() of every script: fails early without API keys; fixes the run's key prefix. */
export function setupRun(scenario, minimumKeys = 1) {
  apiKeys(minimumKeys);
  return { runId: runId(scenario) };
}
