import { createSocket, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/webhooks/address-policy.js';
import { resolveHost } from '../../src/webhooks/resolve-host.js';

/**
 * Webhook host names are resolved with c-ares and abandoned after the timeout (DESIGN 118): a
 * DNS server that never answers holds no libuv thread, and other names still resolve meanwhile.
 * Two local UDP servers stand in for DNS: one never answers, one answers A 93.184.216.34 to
 * every name (and no AAAA).
 */

let silent: Socket;
let answering: Socket;
let silentServer: string;
let answeringServer: string;

function listen(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    socket.bind(0, '127.0.0.1', () => {
      resolve(`127.0.0.1:${String(socket.address().port)}`);
    });
  });
}

/** A DNS answer to `query`: its question, and one A record when it asks for A (type 1). */
function answer(query: Buffer): Buffer {
  let end = 12;
  while (end < query.length && query[end] !== 0) end += (query[end] ?? 0) + 1;
  const question = query.subarray(12, end + 5);
  const isA = query.readUInt16BE(end + 1) === 1;
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  header.writeUInt16BE(0x8180, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(isA ? 1 : 0, 6);
  const record = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34]);
  return Buffer.concat([header, question, ...(isA ? [record] : [])]);
}

beforeAll(async () => {
  silent = createSocket('udp4');
  silent.on('message', () => undefined);
  answering = createSocket('udp4');
  answering.on('message', (query, peer) => {
    answering.send(answer(query), peer.port, peer.address);
  });
  [silentServer, answeringServer] = await Promise.all([listen(silent), listen(answering)]);
});

afterAll(() => {
  silent.close();
  answering.close();
});

describe('resolveHost', () => {
  it('when the DNS server never answers, then the lookup is abandoned at its timeout, and meanwhile other names and the system resolver answer at once', async () => {
    const started = Date.now();
    const hung = Array.from({ length: 8 }, (_, i) =>
      resolveHost(`hung-${String(i)}.example`, { timeoutMs: 1_500, servers: [silentServer] }).then(
        () => 'resolved',
        (error: unknown) => (error as { code?: string }).code ?? 'error',
      ),
    );
    // More hung lookups than libuv has threads: neither c-ares nor getaddrinfo waits on them.
    const other = await resolveHost('other.example', {
      timeoutMs: 1_000,
      servers: [answeringServer],
    });
    expect(other).toEqual([{ address: '93.184.216.34', family: 4 }]);
    const system = await lookup('localhost');
    expect(system.address).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(Date.now() - started).toBeLessThan(1_000);

    const outcomes = await Promise.all(hung);
    const elapsed = Date.now() - started;
    // Cancelled at the timeout, or timed out by c-ares itself at the same instant.
    for (const outcome of outcomes) expect(['ECANCELLED', 'ETIMEOUT']).toContain(outcome);
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(4_000);
  });

  it('when a URL names a host whose DNS never answers, then checkUrl refuses it within its timeout', async () => {
    const policy = createAddressPolicy([], { timeoutMs: 300, servers: [silentServer] });
    const started = Date.now();
    const verdict = await policy.checkUrl('https://never.example/hook');
    expect(verdict).toEqual({ ok: false, reason: 'host never.example does not resolve' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('when localhost is named, then it is the loopback without asking DNS', async () => {
    expect(await resolveHost('localhost', { timeoutMs: 100, servers: [silentServer] })).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
  });
});
