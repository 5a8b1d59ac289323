import { readFile } from 'node:fs/promises';

/**
 * One request a webhook receiver got, as one JSON line of its receipts file: the Standard
 * Webhooks headers, what the CloudEvent body says, whether the signature verified, and what the
 * receiver answered. `npm run verify -- --webhook-receipts <file>` reads these lines back.
 */
export interface WebhookReceipt {
  kind: 'receipt';
  /** The URL requested (the receiver's origin + the request's path): which endpoint sent it. */
  url: string;
  webhook_id: string | null;
  /** The CloudEvent's `id` (must equal webhook-id). */
  event_id: string | null;
  type: string | null;
  /** The CloudEvent's `subject`: the payment id (refund events' too). */
  subject: string | null;
  /** `data.id`: the payment's id, or the refund's. */
  data_id: string | null;
  webhook_timestamp: string | null;
  /** Some secret the receiver was given verifies the signature (and the timestamp is fresh). */
  signature_valid: boolean;
  /** Which of the receiver's secrets (by position) verify it. */
  valid_secrets: number[];
  received_at: string;
  /** The status answered; null while hanging (never answered). */
  status: number | null;
  /** 1 for the first request with this webhook-id at this URL, 2 for the next, ... */
  attempt: number;
}

/** The first line a receiver writes: the origin its endpoints' URLs start with. */
export interface ReceiverStarted {
  kind: 'receiver';
  origin: string;
  started_at: string;
}

export type ReceiptLine = WebhookReceipt | ReceiverStarted;

export interface ReceiptsFile {
  /** Origins of the receivers that wrote the files: their endpoints are judged on receipts. */
  origins: Set<string>;
  receipts: WebhookReceipt[];
}

/** Reads receipts files (JSON lines); a torn last line (a receiver still writing) is skipped. */
export async function readReceiptsFiles(paths: readonly string[]): Promise<ReceiptsFile> {
  const result: ReceiptsFile = { origins: new Set(), receipts: [] };
  for (const path of paths) {
    const text = await readFile(path, 'utf8');
    const lines = text.split('\n');
    for (const [index, line] of lines.entries()) {
      if (line.trim() === '') continue;
      let parsed: ReceiptLine;
      try {
        parsed = JSON.parse(line) as ReceiptLine;
      } catch (error) {
        if (index === lines.length - 1) continue;
        throw new Error(`${path}:${index + 1}: not a JSON line (${String(error)})`, {
          cause: error,
        });
      }
      if (parsed.kind === 'receiver') result.origins.add(parsed.origin);
      else result.receipts.push(parsed);
    }
  }
  return result;
}

/** The URL in a comparable form (origin + path, as `new URL` writes them). */
export function normalizeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}${parsed.search}`;
  } catch {
    return url;
  }
}

/** The URL's origin (scheme, host, port), or the text itself when it is not a URL. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
