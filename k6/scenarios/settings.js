// @ts-check
// Settings of every scenario, read from an environment object: k6's __ENV in a k6 script,
// process.env in the project's load driver (tools/load). Plain module: no k6 or Node import, so
// both runtimes load it and the two cannot read a setting differently.

/** @typedef {Readonly<Record<string, string | undefined>>} Env */

/** A setting that must be an integer >= 0; `fallback` when unset or empty. */
export function intSetting(
  /** @type {Env} */ env,
  /** @type {string} */ name,
  /** @type {number} */ fallback,
) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be an integer >= 0`);
  return value;
}

/** A string setting; `fallback` when unset or empty. */
export function stringSetting(
  /** @type {Env} */ env,
  /** @type {string} */ name,
  /** @type {string} */ fallback,
) {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

const DURATION = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$/;

/** Seconds in a k6-style duration ("90s", "10m", "1h30m", "500ms"); throws on anything else. */
export function durationSeconds(/** @type {string} */ text) {
  const match = DURATION.exec(text);
  if (text === '' || !match) throw new Error(`"${text}" is not a duration (e.g. 90s, 10m, 1h30m)`);
  const [, h = '0', m = '0', s = '0', ms = '0'] = match;
  return Number(h) * 3600 + Number(m) * 60 + Number(s) + Number(ms) / 1000;
}

/** A duration setting, kept in k6's form (k6 reads it as it is); checked here for both. */
export function durationSetting(
  /** @type {Env} */ env,
  /** @type {string} */ name,
  /** @type {string} */ fallback,
) {
  const value = stringSetting(env, name, fallback);
  try {
    durationSeconds(value);
  } catch {
    throw new Error(`${name} must be a duration such as 90s, 10m or 1h30m (got "${value}")`);
  }
  return value;
}

/**
 * The API instances, in order: BASE_URLS (comma-separated) wins over BASE_URL (default
 * http://127.0.0.1:3000). Request i of an iteration goes to instance i, and a retry to the next,
 * as a client behind a load balancer sees it.
 */
export function baseUrls(/** @type {Env} */ env) {
  const urls = stringSetting(
    env,
    'BASE_URLS',
    stringSetting(env, 'BASE_URL', 'http://127.0.0.1:3000'),
  )
    .split(',')
    .map((url) => url.trim().replace(/\/$/, ''))
    .filter((url) => url !== '');
  for (const url of urls) {
    if (!/^https?:\/\/[^\s/]+$/.test(url))
      throw new Error(`BASE_URL(S): "${url}" is not an http(s) origin`);
  }
  if (urls.length === 0) throw new Error('BASE_URLS lists no URL');
  return urls;
}

/** The API keys of the merchants to use (API_KEYS, comma-separated), at least `minimum`. */
export function apiKeys(/** @type {Env} */ env, minimum = 1) {
  const keys = stringSetting(env, 'API_KEYS', '')
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

/**
 * The prefix of every Idempotency-Key a run sends, so `npm run verify -- --key-prefix <RUN_ID>`
 * judges exactly this run: RUN_ID, else `<engine>-<scenario>-<time>`.
 */
export function runId(
  /** @type {Env} */ env,
  /** @type {string} */ scenario,
  /** @type {string} */ engine,
  now = Date.now(),
) {
  const given = env.RUN_ID;
  if (given !== undefined && given !== '') {
    if (!/^[\x21-\x7e]{1,180}$/.test(given)) throw new Error('RUN_ID must be 1-180 visible ASCII');
    return given;
  }
  return `${engine}-${scenario}-${now.toString(36)}`;
}
