import type { Logger } from '../telemetry/logger.js';
import { shutdownTracing } from '../telemetry/tracing.js';

export type CloseFn = () => Promise<void>;

/**
 * On SIGTERM or SIGINT runs the close functions in order (stop intake first, close clients
 * last), bounded by `timeoutMs`, then exits: 0 when everything closed, 1 otherwise.
 * A second signal exits at once.
 */
export function registerShutdown(
  logger: Logger,
  /**
   * Read when the signal arrives, so roles started later are included; given the signal (a
   * SIGTERM drains first, a Ctrl-C does not wait for a load balancer).
   */
  closers: (signal: NodeJS.Signals) => readonly CloseFn[],
  timeoutMs: number,
): void {
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      logger.warn({ signal }, 'second signal: exiting immediately');
      process.exit(1);
    }
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    void runClosers(closers(signal), logger).then(async (ok) => {
      if (!(await shutdownTracing())) {
        logger.warn('tracing collector did not answer; the last spans were dropped');
      }
      clearTimeout(timer);
      logger.info('shutdown complete');
      logger.flush();
      process.exit(ok ? 0 : 1);
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Runs each closer even when an earlier one failed; returns whether all succeeded. */
export async function runClosers(closers: readonly CloseFn[], logger: Logger): Promise<boolean> {
  let ok = true;
  for (const close of closers) {
    try {
      await close();
    } catch (error) {
      ok = false;
      logger.error({ err: error }, 'error during shutdown');
    }
  }
  return ok;
}
