import { fullJitterDelay } from '../resilience/backoff.js';
import type { Logger } from '../telemetry/logger.js';
import { createOutageLog } from '../resilience/outage-log.js';

/** Retries start slowly enough not to spam a broker that is restarting (ceiling of the first). */
const FIRST_DELAY_MS = 250;
/** A dependency back after an outage is picked up within this long. */
const MAX_DELAY_MS = 5_000;
/** connectInBackground runs before a role is configured further; the default interval. */
const OUTAGE_LOG_INTERVAL_MS = 30_000;

/**
 * Keeps calling `connect` with capped exponential backoff (full jitter) until it succeeds or `stop` is
 * called, so a role whose dependency is down at boot waits for it instead of exiting.
 */
export function connectInBackground(
  what: string,
  connect: () => Promise<void>,
  logger: Logger,
  onConnected: () => void = () => undefined,
): { connected: Promise<boolean>; stop: () => void } {
  // A dependency down at boot: one warning, a reminder per interval, one line when connected.
  const outage = createOutageLog(what, logger, OUTAGE_LOG_INTERVAL_MS);
  const state = { stopped: false };
  let wake: (() => void) | undefined;
  const connected = (async () => {
    for (let attempt = 0; !state.stopped; attempt++) {
      try {
        await connect();
        outage.succeeded();
        onConnected();
        return true;
      } catch (error) {
        const delay = fullJitterDelay(attempt + 1, FIRST_DELAY_MS, MAX_DELAY_MS);
        outage.failed(error, { attempt, retryInMs: delay });
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, delay).unref();
        });
      }
    }
    return false;
  })();
  return {
    connected,
    stop: () => {
      state.stopped = true;
      wake?.();
    },
  };
}
