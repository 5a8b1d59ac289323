import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  ADDRESS_REFUSED,
  classifyAddress,
  createAddressPolicy,
} from '../../src/webhooks/address-policy.js';

const publicOnly = createAddressPolicy([]);
const loopbackAllowed = createAddressPolicy(['127.0.0.0/8', '::1/128']);

describe('address policy: isAllowed', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['10.1.2.3', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.0.10', 'a private address'],
    ['169.254.169.254', 'a link-local address'],
    ['100.64.0.1', 'a carrier-grade NAT (shared) address'],
    ['0.0.0.0', 'an unspecified ("this network") address'],
    ['224.0.0.1', 'a multicast address'],
    ['255.255.255.255', 'a reserved address'],
    ['192.0.2.7', 'a documentation address'],
    ['198.51.100.7', 'a documentation address'],
    ['203.0.113.7', 'a documentation address'],
    ['198.18.0.1', 'a benchmarking address'],
    ['::1', 'a loopback address'],
    ['::', 'an unspecified address'],
    ['fd00::1', 'a unique-local address'],
    ['fe80::1', 'a link-local address'],
    ['ff02::1', 'a multicast address'],
    ['2001:db8::1', 'a documentation address'],
    ['2002:7f00:1::', 'a 6to4 address'],
    ['64:ff9b::7f00:1', 'a NAT64 address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['::ffff:10.0.0.1', 'a private address'],
    ['::ffff:a9fe:a9fe', 'a link-local address'],
    ['0:0:0:0:0:ffff:c0a8:1', 'a private address'],
    ['::7f00:1', 'a reserved address'],
  ])('when the address is %s, then it is refused as %s', (address, label) => {
    expect(publicOnly.isAllowed(address)).toBe(false);
    expect(publicOnly.classify(address)).toBe(label);
  });

  it.each(['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'when the address %s is public unicast, then it is allowed',
    (address) => {
      expect(publicOnly.isAllowed(address)).toBe(true);
      expect(classifyAddress(address)).toBeNull();
    },
  );

  it('when the allowlist names loopback, then loopback (and its IPv4-mapped form) is allowed, private still refused', () => {
    expect(loopbackAllowed.isAllowed('127.0.0.1')).toBe(true);
    expect(loopbackAllowed.isAllowed('127.9.9.9')).toBe(true);
    expect(loopbackAllowed.isAllowed('::1')).toBe(true);
    expect(loopbackAllowed.isAllowed('::ffff:127.0.0.1')).toBe(true);
    expect(loopbackAllowed.isAllowed('10.0.0.1')).toBe(false);
    expect(loopbackAllowed.isAllowed('fd00::1')).toBe(false);
  });

  it('when the text is not an IP address, then it is refused', () => {
    expect(publicOnly.isAllowed('example.com')).toBe(false);
  });
});

describe('address policy: checkUrl', () => {
  it('when the URL is an IP literal on loopback, then it is refused naming the class', async () => {
    expect(await publicOnly.checkUrl('http://127.0.0.1:8080/hook')).toEqual({
      ok: false,
      reason:
        '127.0.0.1 resolves to 127.0.0.1, a loopback address; deliveries go to public addresses only',
    });
    const v6 = await publicOnly.checkUrl('https://[::ffff:10.0.0.1]/hook');
    expect(v6.ok).toBe(false);
    expect(!v6.ok && v6.reason).toContain('a private address');
  });

  it('when the URL is a public IP literal, then it is accepted', async () => {
    expect(await publicOnly.checkUrl('https://8.8.8.8/hook')).toEqual({ ok: true });
    expect(await publicOnly.checkUrl('https://[2606:4700:4700::1111]/x')).toEqual({ ok: true });
  });

  it('when the host resolves to loopback (localhost), then it is refused unless allowlisted', async () => {
    const refused = await publicOnly.checkUrl('http://localhost:9/hook');
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.reason).toMatch(/a loopback address/);
    expect(await loopbackAllowed.checkUrl('http://localhost:9/hook')).toEqual({ ok: true });
  });

  it.each([
    'ftp://example.com/x',
    'file:///etc/passwd',
    'gopher://8.8.8.8/',
    'javascript:alert(1)',
  ])('when the scheme is not http(s) (%s), then it is refused', async (url) => {
    expect(await publicOnly.checkUrl(url)).toEqual({ ok: false, reason: 'must use http or https' });
  });

  it('when the URL has userinfo, then it is refused', async () => {
    expect(await publicOnly.checkUrl('https://user:pass@8.8.8.8/x')).toEqual({
      ok: false,
      reason: 'must not contain a user name or password',
    });
    expect((await publicOnly.checkUrl('https://user@8.8.8.8/x')).ok).toBe(false);
  });

  it('when the text is not a URL, then it is refused', async () => {
    expect(await publicOnly.checkUrl('not a url')).toEqual({
      ok: false,
      reason: 'is not a valid URL',
    });
  });

  it('when the host does not resolve, then it is refused', async () => {
    const verdict = await publicOnly.checkUrl('https://no-such-host.invalid/hook');
    expect(verdict).toEqual({ ok: false, reason: 'host no-such-host.invalid does not resolve' });
  });
});

describe('address policy: lookup (connect time)', () => {
  const connect = (policyLookup: typeof publicOnly.lookup) =>
    new Promise<{ code?: string; message: string }>((resolve) => {
      const req = request({
        host: 'localhost',
        port: 9,
        path: '/',
        lookup: policyLookup,
        timeout: 2_000,
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        resolve({ code: error.code, message: error.message });
      });
      req.end();
    });

  it('when the host resolves to a refused address, then the connection fails with WEBHOOK_ADDRESS_REFUSED', async () => {
    const error = await connect(publicOnly.lookup);
    expect(error.code).toBe(ADDRESS_REFUSED);
    expect(error.message).toMatch(/localhost resolves to .*a loopback address/);
  });

  it('when the address is allowlisted, then the lookup lets the connection through (refused by the port, not the policy)', async () => {
    const error = await connect(loopbackAllowed.lookup);
    expect(error.code).not.toBe(ADDRESS_REFUSED);
    expect(error.code).toBe('ECONNREFUSED');
  });

  it('when asked for all addresses, then it answers the list', async () => {
    const all = await new Promise<unknown>((resolve, reject) => {
      loopbackAllowed.lookup('localhost', { all: true }, (error, addresses) => {
        if (error) reject(error);
        else resolve(addresses);
      });
    });
    expect(Array.isArray(all)).toBe(true);
    expect((all as { address: string }[]).map((entry) => entry.address)).toContain('127.0.0.1');
  });
});
