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

export const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { message: `must be an integer between ${min} and ${max}` })
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, { message: `must be at least ${min}` })
        .max(max, { message: `must be at most ${max}` }),
    );

export const brokerList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((broker) => broker.trim())
      .filter((broker) => broker !== ''),
  )
  .pipe(
    z
      .array(
        z.string().regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, {
          message: 'each broker must be host:port',
        }),
      )
      .min(1, { message: 'must list at least one host:port' }),
  );

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

/** `10.0.0.0/8,::1/128`: IP networks with their prefix length; empty lists none. */
export const networkList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ''),
  )
  .pipe(
    z.array(
      z.string().refine(
        (entry) => {
          const [address = '', bits, ...rest] = entry.split('/');
          const family = isIP(address);
          return (
            family !== 0 &&
            rest.length === 0 &&
            bits !== undefined &&
            /^\d{1,3}$/.test(bits) &&
            Number(bits) <= (family === 4 ? 32 : 128)
          );
        },
        { message: 'each entry must be a network like 127.0.0.0/8 or ::1/128' },
      ),
    ),
  );
