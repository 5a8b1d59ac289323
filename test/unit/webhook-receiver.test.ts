import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhooks/receiver.js';
import { readReceiptsFiles } from '../../tools/webhooks/webhook-receipt.js';
import { parseReceiverMode } from '../../tools/webhooks/parse-receiver-mode.js';
import { startReceiverSet } from '../../tools/webhooks/start-receiver-set.js';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
const BODY = JSON.stringify({
  id: 'evt-1',
  type: 'payment.settled',
  subject: 'pay-1',
  data: { id: 'pay-1' },
});

let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

/** A signed POST as the delivery worker sends it (one signature per secret); status or 'timeout'. */
async function send(
  to: WebhookReceiver,
  secrets: readonly string[],
  { id = 'evt-1', timeoutMs = 5_000, urlPath = '/hook' } = {},
): Promise<number | 'timeout'> {
  const now = new Date();
  const signature = secrets.map((secret) => new Webhook(secret).sign(id, now, BODY)).join(' ');
  try {
    const res = await fetch(`${to.origin}${urlPath}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: BODY,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.text();
    return res.status;
  } catch (error) {
    if ((error as Error).name === 'TimeoutError') return 'timeout';
    throw error;
  }
}

describe('webhook receiver (tools/webhooks/receiver.ts)', () => {
  it('when a request is signed with its secret, then it answers 200 and records the event; with another secret 401', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'receiver-'));
    const file = path.join(dir, 'receipts.jsonl');
    receiver = await startWebhookReceiver({ secrets: [SECRET], receiptsFile: file });
    expect(await send(receiver, [SECRET])).toBe(200);
    expect(await send(receiver, [OTHER])).toBe(401);
    const read = await readReceiptsFiles([file]);
    expect([...read.origins]).toEqual([receiver.origin]);
    expect(read.receipts).toMatchObject([
      {
        url: `${receiver.origin}/hook`,
        webhook_id: 'evt-1',
        event_id: 'evt-1',
        type: 'payment.settled',
        subject: 'pay-1',
        data_id: 'pay-1',
        signature_valid: true,
        valid_secrets: [0],
        status: 200,
        attempt: 1,
      },
      { signature_valid: false, valid_secrets: [], status: 401, attempt: 2 },
    ]);
  });

  it("when two secrets sign (a rotation), then each of the receiver's secrets verifies it; per-path secrets apply to their path only", async () => {
    receiver = await startWebhookReceiver({ secrets: [SECRET, OTHER] });
    expect(await send(receiver, [SECRET, OTHER])).toBe(200);
    expect(receiver.receipts()[0]?.valid_secrets).toEqual([0, 1]);
    receiver.setSecrets([OTHER], '/other');
    expect(await send(receiver, [SECRET], { urlPath: '/other' })).toBe(401);
    expect(await send(receiver, [OTHER], { urlPath: '/other' })).toBe(200);
  });

  it('when it fails the first attempts, fails until a time, or is gone, then it answers 500 or 410 as told', async () => {
    receiver = await startWebhookReceiver({
      secrets: [SECRET],
      mode: { kind: 'fail-first', attempts: 2 },
    });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await send(receiver, [SECRET]));
    statuses.push(await send(receiver, [SECRET], { id: 'evt-2' }));
    expect(statuses).toEqual([500, 500, 200, 500]);

    receiver.setMode({ kind: 'fail-until', until: new Date(Date.now() + 60_000) });
    expect(await send(receiver, [SECRET], { id: 'evt-3' })).toBe(500);
    receiver.setMode({ kind: 'fail-until', until: new Date(Date.now() - 1) });
    expect(await send(receiver, [SECRET], { id: 'evt-3' })).toBe(200);
    receiver.setMode({ kind: 'gone' });
    expect(await send(receiver, [SECRET], { id: 'evt-4' })).toBe(410);
  });

  it('when it hangs, then a request before the time is never answered (recorded with no status) and one after it is', async () => {
    receiver = await startWebhookReceiver({
      secrets: [SECRET],
      mode: { kind: 'hang', until: new Date(Date.now() + 60_000) },
    });
    expect(await send(receiver, [SECRET], { timeoutMs: 300 })).toBe('timeout');
    expect(receiver.receipts()[0]).toMatchObject({ status: null, signature_valid: true });
    receiver.setMode({ kind: 'hang', until: new Date(Date.now() - 1) });
    expect(await send(receiver, [SECRET])).toBe(200);
  });

  it('when a mode is written on a command line, then it parses to the mode, and anything else names the forms', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseReceiverMode('ok')).toEqual({ kind: 'ok' });
    expect(parseReceiverMode('fail-first:3')).toEqual({ kind: 'fail-first', attempts: 3 });
    expect(parseReceiverMode('fail-for:30', now)).toEqual({
      kind: 'fail-until',
      until: new Date(now + 30_000),
    });
    expect(parseReceiverMode('hang-for:1.5', now)).toEqual({
      kind: 'hang',
      until: new Date(now + 1_500),
    });
    expect(parseReceiverMode('gone')).toEqual({ kind: 'gone' });
    expect(() => parseReceiverMode('fail-first:x')).toThrow('needs a number');
    expect(() => parseReceiverMode('flaky')).toThrow('--mode must be ok, fail-first:<n>');
  });

  it('when a receiver set starts, then each receiver gets an endpoint per merchant through the API and verifies with the secret it answered', async () => {
    const posted: { auth: string | undefined; body: { url: string; enabled_events: string[] } }[] =
      [];
    const fakeApi = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        posted.push({ auth: req.headers.authorization, body: JSON.parse(text) as never });
        const n = posted.length;
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: `we_${n}`, secret: n === 1 ? SECRET : OTHER }));
      });
    });
    await new Promise<void>((resolve) => fakeApi.listen(0, '127.0.0.1', resolve));
    const apiUrl = `http://127.0.0.1:${(fakeApi.address() as AddressInfo).port}`;
    const dir = await mkdtemp(path.join(tmpdir(), 'receiver-set-'));
    const set = await startReceiverSet({
      modes: [{ kind: 'ok' }],
      dir,
      apiUrl,
      apiKeys: ['k1', 'k2'],
    });
    try {
      expect(posted.map((post) => [post.auth, post.body.enabled_events])).toEqual([
        ['Bearer k1', ['*']],
        ['Bearer k2', ['*']],
      ]);
      const [receiver] = set.receivers;
      if (!receiver) throw new Error('no receiver');
      const [first = '', second = ''] = (set.endpoints[0] ?? []).map((e) =>
        e.url.slice(receiver.origin.length),
      );
      expect(first).toMatch(/^\/hooks\/[0-9a-f]{8}\/1$/);
      expect(second).toBe(first.replace(/1$/, '2'));
      expect(set.endpoints[0]?.map((endpoint) => endpoint.id)).toEqual(['we_1', 'we_2']);
      expect(posted.map((post) => post.body.url)).toEqual(set.endpoints[0]?.map((e) => e.url));
      expect(set.files).toEqual([path.join(dir, 'webhooks-1.jsonl')]);
      expect(await send(receiver, [SECRET], { urlPath: first })).toBe(200);
      expect(await send(receiver, [SECRET], { urlPath: second })).toBe(401);
      expect(await send(receiver, [OTHER], { urlPath: second })).toBe(200);
    } finally {
      await set.close();
      fakeApi.close();
    }
  });
});
