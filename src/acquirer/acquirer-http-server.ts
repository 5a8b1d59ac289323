import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { z } from 'zod';
import {
  AcquirerTransientError,
  type Acquirer,
  type ChargeResult,
  type RefundAcquirer,
} from './acquirer.js';
import type { HoldAcquirer } from './hold-acquirer.js';
import type { ReadinessReport } from '../platform/lifecycle/readiness.js';
import { NO_FAULT, type AcquirerFault, type AcquirerFaults } from './acquirer-faults.js';
import type { TokenCheck } from './acquirer-token.js';

/**
 * The acquirer as its own process (issue 29): charges, refunds and holds over HTTP, as a real acquirer
 * is reached, answered by the simulators (acquirer-simulator.ts, refund-simulator.ts) with their
 * own books. The wire format is what http-acquirer.ts sends:
 *
 * - `POST /charges` and `POST /refunds`, a JSON body, the request's key in `Idempotency-Key`
 *   (the same on every attempt; the books answer a repeated key with the stored answer);
 * - 200 `{ outcome: 'approved', reference }` or `{ outcome: 'declined', code }`: final;
 * - 503 `{ error_class, message, processed: true }`: the acquirer's retryable answer (nothing
 *   done), try again; 503 with `Retry-After` and `processed: false`: refused before processing
 *   (a fault: `unavailable`); 400: a malformed request;
 * - `GET /charges/{key}` and `GET /refunds/{key}` (issue 36): the books' answer for the key
 *   (200, as above) or 404 `{ status: 'not_found' }`: never done, safe to send;
 * - with `holds` (issue 40, DESIGN 128): `POST /authorizations`, `/captures` (each `{ paymentId,
 *   amount, currency, source }`) and `/voids` (`{ paymentId, source }`), answered the same way
 *   (a decline's `code` is one of HOLD_DECLINE_CODES or `card_declined`), and their inquiries
 *   `GET /authorizations/{key}`, `/captures/{key}`, `/voids/{key}`.
 *
 * The faults of acquirer-faults.ts apply to every call but the probes. With a token check
 * (ACQUIRER_TOKEN), every call but the probes needs `Authorization: Bearer <token>`: 401
 * otherwise, before anything is read or done. With `tls` it serves HTTPS.
 *
 * A call is abandoned when its client goes away (the simulators honour the abort signal), so
 * `tok_timeout` costs the server nothing after the caller's timeout.
 */

const MAX_BODY_BYTES = 16 * 1024;

const chargeBody = z.object({
  paymentId: z.uuid(),
  amount: z.number().int().positive(),
  currency: z.string().min(3).max(3),
  source: z.string().min(1).max(200),
});

const refundBody = chargeBody.extend({ refundId: z.uuid() });

const voidBody = chargeBody.pick({ paymentId: true, source: true });

export interface AcquirerServerDeps {
  charges: Acquirer;
  refunds: RefundAcquirer;
  /** Authorizations, captures and voids (issue 40); without it their paths are 404. */
  holds?: HoldAcquirer;
  /** GET /readyz: 200 when ready, 503 otherwise (the acquirer role: its database). */
  readiness?: () => Promise<ReadinessReport>;
  /** The faults in force (none when absent). */
  faults?: AcquirerFaults;
  /** The callers' bearer token (acquirer-token.ts); none: every caller is served. */
  auth?: TokenCheck;
  /** PEM certificate (chain) and key: HTTPS instead of HTTP. */
  tls?: { cert: string; key: string };
}

const INQUIRY = /^\/(charges|refunds|authorizations|captures|voids)\/([^/?]{1,600})$/;

/** Any operation's final answer on the wire: approved with a reference, or declined with a code. */
type FinalAnswer = ChargeResult;

/** A POST path's operation: the parsed body and the key in, the final answer out. */
type Operation = (json: unknown, key: string, signal: AbortSignal) => Promise<FinalAnswer>;

/** A GET path's inquiry: the books' answer for the key, null (or undefined) when never done. */
type Inquiry = (key: string, signal: AbortSignal) => Promise<FinalAnswer | null> | undefined;

function operationsOf({ charges, refunds, holds }: AcquirerServerDeps): Record<string, Operation> {
  return {
    '/charges': (json, key, signal) =>
      charges.charge({ ...chargeBody.parse(json), idempotencyKey: key }, signal),
    '/refunds': (json, key, signal) =>
      refunds.refund({ ...refundBody.parse(json), idempotencyKey: key }, signal),
    ...(holds && {
      '/authorizations': (json, key, signal) =>
        holds.authorize({ ...chargeBody.parse(json), idempotencyKey: key }, signal),
      '/captures': (json, key, signal) =>
        holds.capture({ ...chargeBody.parse(json), idempotencyKey: key }, signal),
      '/voids': (json, key, signal) =>
        holds.void({ ...voidBody.parse(json), idempotencyKey: key }, signal),
    }),
  };
}

function inquiriesOf({ charges, refunds, holds }: AcquirerServerDeps): Record<string, Inquiry> {
  return {
    charges: (key, signal) => charges.inquireCharge?.(key, signal),
    refunds: (key, signal) => refunds.inquireRefund?.(key, signal),
    ...(holds && {
      authorizations: (key, signal) => holds.inquireAuthorization?.(key, signal),
      captures: (key, signal) => holds.inquireCapture?.(key, signal),
      voids: (key, signal) => holds.inquireVoid?.(key, signal),
    }),
  };
}

export function createAcquirerServer(deps: AcquirerServerDeps): Server {
  // Maps, not objects: a path is looked up as given, never found on a prototype.
  const paths = {
    operations: new Map(Object.entries(operationsOf(deps))),
    inquiries: new Map(Object.entries(inquiriesOf(deps))),
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    void route(deps, paths, req, res);
  };
  return deps.tls ? createTlsServer(deps.tls, handle) : createServer(handle);
}

async function route(
  deps: AcquirerServerDeps,
  paths: { operations: Map<string, Operation>; inquiries: Map<string, Inquiry> },
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const aborted = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) aborted.abort(new Error('client closed the connection'));
  });
  try {
    if (req.method === 'GET' && req.url === '/healthz') {
      send(res, 200, { status: 'ok' });
      return;
    }
    if (req.method === 'GET' && req.url === '/readyz' && deps.readiness) {
      const report = await deps.readiness();
      send(res, report.status === 'ready' ? 200 : 503, report);
      return;
    }
    if (deps.auth && !deps.auth.allows(req.headers)) {
      res.setHeader('www-authenticate', 'Bearer');
      send(res, 401, { error: 'unauthorized' });
      return;
    }
    const fault = deps.faults?.current() ?? NO_FAULT;
    if (!(await faultAllows(fault, res, aborted.signal))) return;
    const inquiry = req.method === 'GET' ? INQUIRY.exec(req.url ?? '') : null;
    const inquire = inquiry ? paths.inquiries.get(inquiry[1] ?? '') : undefined;
    if (inquiry && inquire) {
      const found = await inquire(decodeURIComponent(inquiry[2] ?? ''), aborted.signal);
      if (found) send(res, 200, found);
      else send(res, 404, { status: 'not_found' });
      return;
    }
    const operation = req.method === 'POST' ? paths.operations.get(req.url ?? '') : undefined;
    if (!operation) {
      send(res, 404, { error: 'not_found' });
      return;
    }
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length === 0 || key.length > 200) {
      send(res, 400, { error: 'idempotency_key_required' });
      return;
    }
    const json: unknown = JSON.parse(await readBody(req));
    const answer = await operation(json, key, aborted.signal);
    // `drop`: done and recorded, then the answer is lost (the caller sees a reset).
    if ((deps.faults?.current() ?? fault).mode === 'drop') res.socket?.destroy();
    else send(res, 200, answer);
  } catch (error) {
    if (aborted.signal.aborted) return;
    if (error instanceof AcquirerTransientError) {
      send(res, 503, { error_class: error.errorClass, message: error.message, processed: true });
    } else if (error instanceof SyntaxError || error instanceof z.ZodError) {
      send(res, 400, { error: 'invalid_request' });
    } else {
      send(res, 500, { error: 'internal', message: String(error) });
    }
  }
}

/**
 * Applies the fault before the call is processed: false when the call was answered or left
 * hanging here (`unavailable`, `hang`, `down` for a connection that raced the close).
 */
async function faultAllows(
  fault: AcquirerFault,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<boolean> {
  switch (fault.mode) {
    case 'down':
      res.socket?.destroy();
      return false;
    case 'unavailable':
      res.setHeader('retry-after', String(fault.retry_after_seconds));
      send(res, 503, {
        error_class: 'acquirer_unavailable',
        message: 'refused before processing',
        processed: false,
      });
      return false;
    case 'hang':
      return false;
    case 'slow':
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, fault.latency_ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
      return !signal.aborted;
    default:
      return true;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new SyntaxError('body too large'));
        req.destroy();
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
