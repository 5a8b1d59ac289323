import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { ReceiverStarted, WebhookReceipt } from './webhook-receipt.js';

/**
 * How the receiver answers. `ok`: 200 when the signature verifies, 401 when it does not.
 * `fail-first`: 500 to the first `attempts` requests of each webhook-id. `fail-until`: 500 to
 * every request before `until`. `hang`: never answers a request that arrives before `until`
 * (the sender's timeout ends it). `gone`: 410 to everything. Outside a failure, `ok` applies.
 */
export type ReceiverMode =
  | { kind: 'ok' }
  | { kind: 'fail-first'; attempts: number }
  | { kind: 'fail-until'; until: Date }
  | { kind: 'hang'; until: Date }
  | { kind: 'gone' };

export interface ReceiverOptions {
  /** Signing secrets (whsec_...); a request is valid when any of them verifies it. */
  secrets?: readonly string[];
  /** Called per request when set: the secrets to verify with (e.g. re-read from a file). */
  loadSecrets?: () => readonly string[];
  mode?: ReceiverMode;
  /** Appends each receipt as a JSON line (the file is created, or emptied, at start). */
  receiptsFile?: string;
  host?: string;
  port?: number;
  /** Largest body read (bytes); a larger one is answered 413 (default 1 MiB). */
  maxBodyBytes?: number;
}

export interface WebhookReceiver {
  /** http://host:port: an endpoint's URL is this plus any path. */
  origin: string;
  port: number;
  receipts: () => readonly WebhookReceipt[];
  setMode: (mode: ReceiverMode) => void;
  /** The secrets to verify with: for requests to `path` only when given, else for every other. */
  setSecrets: (secrets: readonly string[], path?: string) => void;
  close: () => Promise<void>;
}

/**
 * A merchant's webhook endpoint for tests, k6 and chaos runs (issue 27): an HTTP server that
 * verifies every request's Standard Webhooks signature with the `standardwebhooks` library,
 * answers as its mode says, and records each request (in memory and, when asked, as a JSON line
 * in a file that `npm run verify -- --webhook-receipts` reads).
 */
export async function startWebhookReceiver(
  options: ReceiverOptions = {},
): Promise<WebhookReceiver> {
  let mode: ReceiverMode = options.mode ?? { kind: 'ok' };
  let secrets: readonly string[] = options.secrets ?? [];
  const pathSecrets = new Map<string, readonly string[]>();
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const receipts: WebhookReceipt[] = [];
  const attempts = new Map<string, number>();
  const file = options.receiptsFile;

  const record = (receipt: WebhookReceipt) => {
    receipts.push(receipt);
    if (file) appendFileSync(file, `${JSON.stringify(receipt)}\n`);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer, origin: string) => {
    const receivedAt = new Date();
    const headers = {
      'webhook-id': header(req, 'webhook-id'),
      'webhook-timestamp': header(req, 'webhook-timestamp'),
      'webhook-signature': header(req, 'webhook-signature'),
    };
    const text = body.toString('utf8');
    const url = `${origin}${req.url ?? '/'}`;
    const attemptKey = `${url} ${headers['webhook-id']}`;
    const attempt = (attempts.get(attemptKey) ?? 0) + 1;
    attempts.set(attemptKey, attempt);

    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const current =
      pathSecrets.get(path) ?? (options.loadSecrets ? options.loadSecrets() : secrets);
    const validSecrets: number[] = [];
    current.forEach((secret, index) => {
      try {
        new Webhook(secret).verify(text, headers);
        validSecrets.push(index);
      } catch {
        // this secret does not verify it (or the headers are missing or stale)
      }
    });
    const event = parseEvent(text);
    let status: number | null = validSecrets.length > 0 ? 200 : 401;
    if (mode.kind === 'gone') status = 410;
    else if (mode.kind === 'fail-first' && attempt <= mode.attempts) status = 500;
    else if (mode.kind === 'fail-until' && receivedAt < mode.until) status = 500;
    else if (mode.kind === 'hang' && receivedAt < mode.until) status = null;

    record({
      kind: 'receipt',
      url,
      webhook_id: headers['webhook-id'] || null,
      event_id: event.id,
      type: event.type,
      subject: event.subject,
      data_id: event.dataId,
      webhook_timestamp: headers['webhook-timestamp'] || null,
      signature_valid: validSecrets.length > 0,
      valid_secrets: validSecrets,
      received_at: receivedAt.toISOString(),
      status,
      attempt,
    });
    if (status !== null) res.writeHead(status, { 'content-type': 'text/plain' }).end(`${status}`);
  };

  let origin = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBody) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > maxBody) res.writeHead(413).end();
      else handle(req, res, Buffer.concat(chunks), origin);
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (file) {
    const started: ReceiverStarted = {
      kind: 'receiver',
      origin,
      started_at: new Date().toISOString(),
    };
    writeFileSync(file, `${JSON.stringify(started)}\n`);
  }

  return {
    origin,
    port,
    receipts: () => receipts,
    setMode: (next) => {
      mode = next;
    },
    setSecrets: (next, path) => {
      if (path === undefined) secrets = next;
      else pathSecrets.set(path, next);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(' ') : (value ?? '');
}

interface EventFields {
  id: string | null;
  type: string | null;
  subject: string | null;
  dataId: string | null;
}

function parseEvent(text: string): EventFields {
  const text_ = (value: unknown) => (typeof value === 'string' ? value : null);
  try {
    const event = JSON.parse(text) as Record<string, unknown>;
    const data = event.data as Record<string, unknown> | null | undefined;
    return {
      id: text_(event.id),
      type: text_(event.type),
      subject: text_(event.subject),
      dataId: text_(data?.id),
    };
  } catch {
    return { id: null, type: null, subject: null, dataId: null };
  }
}
