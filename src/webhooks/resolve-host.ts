import type { LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';

/** How a webhook host name is resolved: within `timeoutMs`, from `servers` (absent: the system's). */
export interface ResolveOptions {
  timeoutMs: number;
  /** DNS servers (`ip` or `ip:port`); absent: /etc/resolv.conf's. */
  servers?: readonly string[];
}

/** `localhost` and `*.localhost` name the loopback (RFC 6761): answered here, never asked. */
const LOOPBACK: readonly LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

function isLocalhost(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * The A and AAAA records of `host`, IPv4 first. Asked with c-ares (dns.promises.Resolver), not
 * dns.lookup: getaddrinfo holds one of libuv's four threads until the system resolver gives up,
 * so a few hosts that never answer would stall every other lookup in the process (DESIGN 118).
 * One try of `timeoutMs`, then the queries are cancelled (ECANCELLED) and nothing is held.
 * /etc/hosts is not read, except that `localhost` is the loopback. Rejects when neither family
 * resolves.
 */
export async function resolveHost(host: string, options: ResolveOptions): Promise<LookupAddress[]> {
  if (isLocalhost(host)) return [...LOOPBACK];
  const resolver = new Resolver({ timeout: options.timeoutMs, tries: 1 });
  if (options.servers !== undefined) resolver.setServers([...options.servers]);
  const timer = setTimeout(() => {
    resolver.cancel();
  }, options.timeoutMs);
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses: LookupAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length > 0) return addresses;
    const failed = v4.status === 'rejected' ? v4 : v6.status === 'rejected' ? v6 : null;
    throw failed?.reason instanceof Error ? failed.reason : new Error(`${host} has no address`);
  } finally {
    clearTimeout(timer);
  }
}
