import type { LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { resolveHost, type ResolveOptions } from './resolve-host.js';

/** What `checkUrl` says about an endpoint URL. */
export type UrlVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Where webhook deliveries may go (issue 27, DESIGN "Webhooks"): public unicast addresses, plus
 * the operator's allowlist. Checked when an endpoint is created (checkUrl) and again at every
 * connection (lookup), so a DNS answer changed after creation cannot point a delivery inward.
 */
export interface AddressPolicy {
  /** The address is public unicast, or inside one of the allowed networks. */
  isAllowed(address: string): boolean;
  /** The special range an address is in ('a loopback address'), or null for public unicast. */
  classify(address: string): string | null;
  /** http(s) only, no userinfo, the host resolved within 2 s and every address allowed. */
  checkUrl(url: string): Promise<UrlVerdict>;
  /**
   * For http.request: resolves (within 2 s, resolve-host.ts), then refuses (code
   * WEBHOOK_ADDRESS_REFUSED) any disallowed answer.
   */
  lookup: LookupFunction;
}

/** The error code of a connection refused by the policy. */
export const ADDRESS_REFUSED = 'WEBHOOK_ADDRESS_REFUSED';

/** How long checkUrl and lookup wait for a host to resolve. */
export const RESOLVE_TIMEOUT_MS = 2_000;

type Family = 'ipv4' | 'ipv6';
type Range = readonly [network: string, prefix: number, label: string];

/** IPv4 ranges that are not public unicast (IANA special-purpose registry). */
const IPV4_SPECIAL: readonly Range[] = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT (shared) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol assignment address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay anycast address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

/** IPv6 ranges inside global unicast (2000::/3) that are not public. */
const IPV6_SPECIAL: readonly Range[] = [
  ['2001:db8::', 32, 'a documentation address'],
  ['3fff::', 20, 'a documentation address'],
  ['2001::', 23, 'an IETF protocol assignment address'],
  ['2002::', 16, 'a 6to4 address'],
];

/** IPv6 ranges outside global unicast, named for the refusal's reason. */
const IPV6_NAMED: readonly Range[] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['64:ff9b::', 96, 'a NAT64 address'],
  ['64:ff9b:1::', 48, 'a NAT64 address'],
  ['100::', 64, 'a discard address'],
  ['fc00::', 7, 'a unique-local address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

function blockList(ranges: readonly Range[], family: Family): Map<string, BlockList> {
  const byLabel = new Map<string, BlockList>();
  for (const [network, prefix, label] of ranges) {
    const list = byLabel.get(label) ?? new BlockList();
    list.addSubnet(network, prefix, family);
    byLabel.set(label, list);
  }
  return byLabel;
}

const ipv4Special = blockList(IPV4_SPECIAL, 'ipv4');
const ipv6Special = blockList(IPV6_SPECIAL, 'ipv6');
const ipv6Named = blockList(IPV6_NAMED, 'ipv6');
const globalUnicast = new BlockList();
globalUnicast.addSubnet('2000::', 3, 'ipv6');
const ipv4Mapped = new BlockList();
ipv4Mapped.addSubnet('::ffff:0:0', 96, 'ipv6');

function labelIn(lists: Map<string, BlockList>, address: string, family: Family): string | null {
  for (const [label, list] of lists) if (list.check(address, family)) return label;
  return null;
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d or ::ffff:xxxx:xxxx) names. */
function unmapped(address: string): string {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted?.[1] !== undefined) return dotted[1];
  const hex = /:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  const high = Number.parseInt(hex?.[1] ?? '0', 16);
  const low = Number.parseInt(hex?.[2] ?? '0', 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** An address as the checks read it: family, and IPv4-mapped IPv6 as its IPv4 address. */
function normalize(address: string): { address: string; family: Family } | null {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const version = isIP(bare);
  if (version === 4) return { address: bare, family: 'ipv4' };
  if (version !== 6) return null;
  if (ipv4Mapped.check(bare, 'ipv6')) return { address: unmapped(bare), family: 'ipv4' };
  return { address: bare, family: 'ipv6' };
}

/** The special range an address is in, or null for a public unicast address. */
export function classifyAddress(address: string): string | null {
  const ip = normalize(address);
  if (ip === null) return 'not an IP address';
  if (ip.family === 'ipv4') return labelIn(ipv4Special, ip.address, 'ipv4');
  const named = labelIn(ipv6Named, ip.address, 'ipv6');
  if (named !== null) return named;
  if (!globalUnicast.check(ip.address, 'ipv6')) return 'a reserved address';
  return labelIn(ipv6Special, ip.address, 'ipv6');
}

function refusal(hostname: string, address: string, label: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `${hostname} resolves to ${address}, ${label}; deliveries go to public addresses only`,
  );
  error.code = ADDRESS_REFUSED;
  return error;
}

export function createAddressPolicy(
  allowedNetworks: readonly string[],
  resolving: Partial<ResolveOptions> = {},
): AddressPolicy {
  const resolveOptions: ResolveOptions = { timeoutMs: RESOLVE_TIMEOUT_MS, ...resolving };
  const allowed = new BlockList();
  for (const entry of allowedNetworks) {
    const [network = '', bits = ''] = entry.split('/');
    const family: Family = isIP(network) === 6 ? 'ipv6' : 'ipv4';
    allowed.addSubnet(network, Number(bits), family);
  }

  const classify = (address: string): string | null => {
    const ip = normalize(address);
    if (ip !== null && allowed.check(ip.address, ip.family)) return null;
    return classifyAddress(address);
  };
  const isAllowed = (address: string): boolean => classify(address) === null;

  /** The first disallowed address of a resolution, as an error; null when all are allowed. */
  const refuseAny = (hostname: string, addresses: readonly LookupAddress[]) => {
    if (addresses.length === 0) return new Error(`${hostname} resolves to no address`);
    for (const { address } of addresses) {
      const label = classify(address);
      if (label !== null) return refusal(hostname, address, label);
    }
    return null;
  };

  const checkUrl = async (url: string): Promise<UrlVerdict> => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, reason: 'is not a valid URL' };
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      return { ok: false, reason: 'must use http or https' };
    }
    if (parsed.username !== '' || parsed.password !== '') {
      return { ok: false, reason: 'must not contain a user name or password' };
    }
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    if (host === '') return { ok: false, reason: 'has no host' };
    let addresses: LookupAddress[];
    if (isIP(host) !== 0) {
      addresses = [{ address: host, family: isIP(host) }];
    } else {
      try {
        addresses = await resolveHost(host, resolveOptions);
      } catch {
        return { ok: false, reason: `host ${host} does not resolve` };
      }
    }
    const refused = refuseAny(host, addresses);
    return refused === null ? { ok: true } : { ok: false, reason: refused.message };
  };

  const lookup: LookupFunction = (hostname, options, callback) => {
    const answer = (error: NodeJS.ErrnoException | null, all: LookupAddress[]) => {
      if (error) {
        callback(error, '', 0);
        return;
      }
      const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
      const addresses = family === 4 || family === 6 ? all.filter((a) => a.family === family) : all;
      const refused = refuseAny(hostname, addresses);
      if (refused !== null) {
        callback(refused, '', 0);
      } else if (options.all === true) {
        (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, addresses);
      } else {
        const [first] = addresses;
        callback(null, first?.address ?? '', first?.family ?? 0);
      }
    };
    if (isIP(hostname) !== 0) {
      answer(null, [{ address: hostname, family: isIP(hostname) }]);
      return;
    }
    resolveHost(hostname, resolveOptions).then(
      (all) => {
        answer(null, all);
      },
      (error: unknown) => {
        answer(error instanceof Error ? error : new Error(String(error)), []);
      },
    );
  };

  return { isAllowed, classify, checkUrl, lookup };
}
