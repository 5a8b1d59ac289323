import { createAcquirerServer } from '../../acquirer/acquirer-http-server.js';
import { createAcquirerSimulator } from '../../acquirer/acquirer-simulator.js';
import { createRefundSimulator } from '../../acquirer/refund-simulator.js';
import { closeServer, listen } from '../../platform/http-listen.js';
import type { Platform } from '../../platform/platform.js';
import { checkReadiness } from '../../platform/readiness.js';
import type { RunningRole } from '../running-role.js';

/**
 * The acquirer role (issue 29): the simulator of BRIEF section 6 as its own process, reached
 * over HTTP (acquirer-http-server.ts) the way a real acquirer is, with its own books on its
 * own login. Settlement and the refund worker call it when ACQUIRER_URL is set. It listens on
 * ACQUIRER_HOST:ACQUIRER_PORT; /healthz and /readyz (its database) are served there too.
 * On close the listener stops accepting and the calls in flight finish.
 */
export async function startAcquirer(platform: Platform): Promise<RunningRole & { port: number }> {
  const { config, pool } = platform;
  const logger = platform.logger.child({ role: 'acquirer' });
  const server = createAcquirerServer({
    charges: createAcquirerSimulator(pool, {
      latencyMs: config.ACQUIRER_SIM_LATENCY_MS,
      transientFailureRate: config.ACQUIRER_SIM_FAILURE_RATE,
      // Longer than the callers' timeout: tok_timeout is cut by the caller, which hangs up.
      timeoutTokenDelayMs: config.ACQUIRER_TIMEOUT_MS * 3,
    }),
    refunds: createRefundSimulator(pool),
    readiness: () => checkReadiness(platform.checks, config.READINESS_TIMEOUT_MS),
  });
  // Settlement's keep-alive agent reuses connections: keep them open longer than its idle gap.
  server.keepAliveTimeout = 30_000;
  const port = await listen(server, config.ACQUIRER_PORT, config.ACQUIRER_HOST);
  logger.info({ host: config.ACQUIRER_HOST, port }, 'acquirer ready');
  return {
    name: 'acquirer',
    port,
    close: () => closeServer(server),
  };
}
