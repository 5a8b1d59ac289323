import { isIP } from 'node:net';
import { z } from 'zod';

// The value types of the configuration schema: each rejects with a message naming its rule.

export const urlWithProtocol = (protocols: readonly string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        const url = new URL(value);
        return protocols.includes(url.protocol) && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

/**
 * Digits only, within [min, max]. Every refusal names the range, digits too many to be a safe
 * integer included (zod's own wording there is "Too big: expected int to be <=9007199254740991").
 */
export const integer = (min: number, max: number) => {
  const range = `must be an integer between ${min} and ${max}`;
  return z
    .string()
    .regex(/^\d+$/, { message: range })
    .transform(Number)
    .pipe(
      z
        .number({ message: range })
        .int({ message: range })
        .min(min, { message: `must be at least ${min}` })
        .max(max, { message: `must be at most ${max}` }),
    );
};

/**
 * A comma-separated list, each entry read by `entry` (undefined: not a valid entry). Blanks around
 * entries and empty entries are ignored. Every refusal is one message naming the accepted form
 * (`form`, with an example), never a zod type error about an entry it could not read.
 */
export function commaList<T>(options: {
  entry: (text: string) => T | undefined;
  form: string;
  min?: number;
  max?: number;
}) {
  const { entry, form, min = 0, max = Number.POSITIVE_INFINITY } = options;
  return z.string().transform((value, context): T[] => {
    const texts = value
      .split(',')
      .map((text) => text.trim())
      .filter((text) => text !== '');
    const entries: T[] = [];
    for (const text of texts) {
      const parsed = entry(text);
      if (parsed === undefined) {
        context.addIssue({
          code: 'custom',
          message: `must be ${form} (${JSON.stringify(text)} is not)`,
        });
        return z.NEVER;
      }
      entries.push(parsed);
    }
    if (entries.length < min || entries.length > max) {
      const count =
        max === Number.POSITIVE_INFINITY
          ? `at least ${String(min)}`
          : `${String(min)} to ${String(max)}`;
      context.addIssue({
        code: 'custom',
        message: `must be ${form}, with ${count} entries`,
      });
      return z.NEVER;
    }
    return entries;
  });
}

export const brokerList = commaList({
  entry: (text) => (/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(text) ? text : undefined),
  form: 'a comma-separated list of Kafka brokers as host:port, e.g. 127.0.0.1:9092,10.0.0.2:9092',
  min: 1,
});

export const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, {
  message: 'must be a Kafka topic name ([A-Za-z0-9._-], 1-249 chars)',
});

/** Express' `trust proxy` setting, as TRUST_PROXY gives it (see trustProxySetting). */
export type TrustProxy = boolean | number | string[];

/** The address ranges proxy-addr (Express) knows by name. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
/** More hops than any real chain of proxies: a typo, not a deployment. */
const MAX_PROXY_HOPS = 32;

/** `loopback`, an IP address, or an address with a prefix length (`10.0.0.0/8`, `fd00::/8`). */
function isProxyRange(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

function parseTrustProxy(value: string): TrustProxy | undefined {
  if (value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    return hops >= 1 && hops <= MAX_PROXY_HOPS ? hops : undefined;
  }
  const entries = value.split(',').map((entry) => entry.trim());
  return entries.every(isProxyRange) ? entries : undefined;
}

/**
 * Which proxies' X-Forwarded-For is believed, in Express' `trust proxy` terms: `false` (none:
 * the client is the socket's peer), `true` (every hop: the left-most address, which the client
 * itself writes), a hop count, or a comma-separated list of proxy addresses, CIDR ranges and
 * the names `loopback`, `linklocal`, `uniquelocal`. Anything else is refused, not guessed at.
 */
export const trustProxySetting = z
  .string()
  .refine((value) => parseTrustProxy(value) !== undefined, {
    message: `must be false, true, a hop count (1-${MAX_PROXY_HOPS}) or a comma-separated list of IP addresses, CIDR ranges, loopback, linklocal or uniquelocal`,
  })
  .transform((value): TrustProxy => parseTrustProxy(value) ?? false);

/** An IP network with its prefix length: `10.0.0.0/8`, `::1/128`. */
function isNetwork(entry: string): boolean {
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  return (
    family !== 0 &&
    rest.length === 0 &&
    bits !== undefined &&
    /^\d{1,3}$/.test(bits) &&
    Number(bits) <= (family === 4 ? 32 : 128)
  );
}

/** `10.0.0.0/8,::1/128`: IP networks with their prefix length; empty lists none. */
export const networkList = commaList({
  entry: (text) => (isNetwork(text) ? text : undefined),
  form: 'a comma-separated list of IP networks with their prefix length, e.g. 127.0.0.0/8,::1/128',
});

/** A duration as `500ms`, `5s`, `5m`, `2h` or `1d`, or bare digits (milliseconds). */
const DURATION = /^(\d{1,10})(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The duration in milliseconds, or undefined when `text` is none. */
export function durationMs(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (match === null) return undefined;
  const [, amount = '', unit = 'ms'] = match;
  return Number(amount) * (UNIT_MS[unit] ?? Number.NaN);
}

/**
 * A comma-separated list of delays, each in milliseconds (`5000`) or with a unit (`5s`), from
 * 1 ms to `maxMs`. Bare milliseconds are what docs/configuration.md prints as the default.
 */
export function durationList(options: { maxMs: number; maxEntries: number; example: string }) {
  const { maxMs, maxEntries, example } = options;
  const largest =
    maxMs % 86_400_000 === 0 ? `${String(maxMs / 86_400_000)}d` : `${String(maxMs)} ms`;
  return commaList({
    entry: (text) => {
      const ms = durationMs(text);
      return ms !== undefined && ms >= 1 && ms <= maxMs ? ms : undefined;
    },
    form: `a comma-separated list of delays from 1 ms to ${largest}, each in milliseconds or with a unit (ms, s, m, h, d), e.g. ${example}`,
    min: 1,
    max: maxEntries,
  });
}
