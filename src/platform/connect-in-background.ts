import { fullJitterDelay } from './backoff.js';
import type { Logger } from './logger.js';

/** Retries start slowly enough not to spam a broker that is restarting (ceiling of the first). */
const FIRST_DELAY_MS = 250;
/** A dependency back after an outage is picked up within this long. */
const MAX_DELAY_MS = 5_000;

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
  const state = { stopped: false };
  let wake: (() => void) | undefined;
  const connected = (async () => {
    for (let attempt = 0; !state.stopped; attempt++) {
      try {
        await connect();
        onConnected();
        return true;
      } catch (error) {
        const delay = fullJitterDelay(attempt + 1, FIRST_DELAY_MS, MAX_DELAY_MS);
        logger.warn({ err: error, attempt, retryInMs: delay }, `${what}: connect failed`);
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
