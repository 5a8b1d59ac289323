import pg from 'pg';
import { fullJitterDelay } from '../platform/resilience/backoff.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { createOutageLog } from '../platform/resilience/outage-log.js';

/** The channel of the `outbox_notify` trigger (migration 0003). */
export const OUTBOX_CHANNEL = 'outbox';

/** A restarting Postgres is retried quickly at first. */
const FIRST_RETRY_MS = 100;
/** A listener back after an outage wakes the relay within this long; the poll covers the gap. */
const MAX_RETRY_MS = 5_000;

export interface OutboxListenerOptions {
  connectionString: string;
  logger: Logger;
  /** Called on every notification, and after each (re)connect (rows may have come meanwhile). */
  onNotify: () => void;
  /** Called each time LISTEN is in place. */
  onListening?: () => void;
  applicationName?: string;
  /** While it cannot connect, how often that is logged again (default 30 s, OUTAGE_LOG_INTERVAL_MS). */
  outageLogIntervalMs?: number;
}

export interface OutboxListener {
  close: () => Promise<void>;
}

/**
 * Keeps one dedicated connection (not from the pool: a pooled connection is handed to others
 * between queries, and a transaction-mode pooler drops LISTEN) listening on the outbox channel,
 * and reconnects with capped backoff (full jitter) whenever it breaks. Notifications are wake-up hints only.
 */
export function listenForOutbox(options: OutboxListenerOptions): OutboxListener {
  const { logger } = options;
  // Reconnect attempts every few seconds through an outage: a few lines, not one per attempt.
  const outage = createOutageLog('outbox listener', logger, options.outageLogIntervalMs ?? 30_000);
  let stopped = false;
  /** A function, not the variable: the loop must see the value close() sets while it awaits. */
  const isStopped = (): boolean => stopped;
  let current: pg.Client | undefined;
  let interruptWait: (() => void) | undefined;

  const loop = (async () => {
    for (let failures = 0; !isStopped(); failures++) {
      if (failures > 0) {
        const delay = fullJitterDelay(failures, FIRST_RETRY_MS, MAX_RETRY_MS);
        await new Promise<void>((resolve) => {
          interruptWait = resolve;
          setTimeout(resolve, delay).unref();
        });
        if (isStopped()) break;
      }
      const client = new pg.Client({
        connectionString: options.connectionString,
        application_name: options.applicationName ?? 'payments-relay-listener',
        // Detects a silently dead peer (no traffic flows on an idle LISTEN connection).
        keepAlive: true,
      });
      const broken = new Promise<Error | undefined>((resolve) => {
        client.on('error', resolve);
        client.on('end', () => {
          resolve(undefined);
        });
      });
      current = client;
      try {
        await client.connect();
        await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
        client.on('notification', () => {
          options.onNotify();
        });
        if (isStopped()) break;
        outage.succeeded();
        failures = 0;
        options.onListening?.();
        options.onNotify();
        const error = await broken;
        if (!isStopped()) logger.warn({ err: error }, 'outbox listener connection lost');
      } catch (error) {
        if (!isStopped()) outage.failed(error, { attempts: failures + 1 });
      } finally {
        current = undefined;
        await client.end().catch(() => undefined);
      }
    }
  })();

  return {
    close: async () => {
      stopped = true;
      interruptWait?.();
      await current?.end().catch(() => undefined);
      await loop;
    },
  };
}
