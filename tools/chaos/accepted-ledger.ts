import type pg from 'pg';
import type { RequestSample } from '../load/http-transport.js';
import { sleep } from './timeline.js';

/** One payment the service accepted: the client holds its id and must find it forever after. */
interface Accepted {
  key: string;
  paymentId: string;
}

/** A retrying client gives up on one key after this long (it never does within a run). */
const REQUEST_TIMEOUT_MS = 10_000;
const RETRY_AFTER_MS = 250;

/**
 * The HA run's witness of I1 (an accepted payment is never lost): a client that creates payments
 * at a steady rate, each with its own Idempotency-Key, retrying a key (same body) on 5xx, 409 or
 * no answer until it is answered 202/201, and keeping every accepted payment's id. After each
 * leader kill, `missing` looks every one of them up in the database: a failover that loses a
 * committed payment (an asynchronous standby promoted) shows here, whatever the load driver saw.
 */
export class AcceptedLedger {
  readonly samples: RequestSample[] = [];
  private readonly accepted: Accepted[] = [];
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private next = 0;

  constructor(
    private readonly input: {
      apiUrls: readonly string[];
      apiKey: string;
      runId: string;
      perSecond: number;
    },
  ) {}

  start(): void {
    this.running = true;
    const gapMs = 1000 / this.input.perSecond;
    const inFlight = new Set<Promise<void>>();
    this.loop = (async () => {
      const started = Date.now();
      for (let n = 0; this.running; n++) {
        const payment = this.create(n).finally(() => inFlight.delete(payment));
        inFlight.add(payment);
        await sleep(started + (n + 1) * gapMs - Date.now());
      }
      await Promise.all(inFlight);
    })();
  }

  /** Stops creating; waits for the keys in flight to be answered (or the retries to stop). */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** How many were accepted so far, and those of them the database does not have (none lost). */
  async missing(db: pg.Pool): Promise<{ judged: number; missing: Accepted[] }> {
    // The ones accepted so far: those answered while the query runs are judged next time.
    const judged = [...this.accepted];
    const ids = judged.map((a) => a.paymentId);
    const { rows } = await db.query<{ id: string }>(
      `SELECT p.id FROM payments p
         JOIN idempotency_keys k ON k.payment_id = p.id
        WHERE p.id = ANY($1::uuid[])`,
      [ids],
    );
    const found = new Set(rows.map((row) => row.id));
    return { judged: judged.length, missing: judged.filter((a) => !found.has(a.paymentId)) };
  }

  /** Sends key n until it is accepted, refused for good (4xx other than 409) or the run stops. */
  private async create(n: number): Promise<void> {
    const key = `${this.input.runId}-ledger-${n}`;
    const body = JSON.stringify({ amount: 100 + (n % 9_000), currency: 'EUR' });
    for (let attempt = 0; ; attempt++) {
      const url = this.input.apiUrls[(n + attempt) % this.input.apiUrls.length] ?? '';
      const startedAt = Date.now();
      let status = 0;
      let error = '';
      let paymentId: unknown;
      try {
        const response = await fetch(`${url}/payments`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${this.input.apiKey}`,
            'Idempotency-Key': key,
            'Content-Type': 'application/json',
          },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        status = response.status;
        const answer = (await response.json().catch(() => null)) as { id?: unknown } | null;
        paymentId = answer?.id;
      } catch (cause) {
        error = cause instanceof Error ? cause.name : 'error';
      }
      const atMs = Date.now();
      this.samples.push({
        atMs,
        durationMs: atMs - startedAt,
        status,
        error,
        name: 'POST /payments (ledger)',
      });
      if ((status === 201 || status === 202) && typeof paymentId === 'string') {
        this.accepted.push({ key, paymentId });
        return;
      }
      const retryable = status === 0 || status === 409 || status === 429 || status >= 500;
      if (!retryable || !this.running) return;
      await sleep(RETRY_AFTER_MS);
    }
  }
}
