import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import {
  createAcquirerFaults,
  faultRequest,
  type AcquirerFault,
  type AcquirerFaults,
} from '../../acquirer/acquirer-faults.js';
import { createAcquirerServer } from '../../acquirer/acquirer-http-server.js';
import { createAcquirerSimulator } from '../../acquirer/acquirer-simulator.js';
import { createTokenCheck } from '../../acquirer/acquirer-token.js';
import { createHoldSimulator } from '../../acquirer/hold-simulator.js';
import { createRefundSimulator } from '../../acquirer/refund-simulator.js';
import { acquirerBookSweeps, startRetentionReaper } from '../../jobs/retention-reaper.js';
import { closeServer, listen } from '../../platform/lifecycle/http-listen.js';
import type { InternalRoute } from '../../platform/lifecycle/internal-server.js';
import type { Logger } from '../../platform/telemetry/logger.js';
import type { Platform } from '../../platform/lifecycle/platform.js';
import { checkRequired } from '../../platform/lifecycle/readiness.js';
import { roleDependencies } from '../role-dependencies.js';
import type { RunningRole } from '../running-role.js';

/**
 * The acquirer role (issue 29): the simulator of BRIEF section 6 as its own process, reached
 * over HTTP (acquirer-http-server.ts) the way a real acquirer is, with its own books on its
 * own login. Settlement and the refund worker call it when ACQUIRER_URL is set. It listens on
 * ACQUIRER_HOST:ACQUIRER_PORT; /healthz and /readyz (its database alone) are served there too.
 * Its faults (acquirer-faults.ts, issue 36) are set with `PUT /acquirer/fault` on the process's
 * internal listener and read with `GET /acquirer/fault`; `down` closes the listener and opens it
 * again on the same port when the fault ends. On close the listener stops accepting and the
 * calls in flight finish.
 */
export async function startAcquirer(platform: Platform): Promise<RunningRole & { port: number }> {
  const { config, pool } = platform;
  const logger = platform.logger.child({ role: 'acquirer' });
  const faults = createAcquirerFaults();
  const simulated = {
    latencyMs: config.ACQUIRER_SIM_LATENCY_MS,
    transientFailureRate: config.ACQUIRER_SIM_FAILURE_RATE,
    // Longer than the callers' timeout: tok_timeout is cut by the caller, which hangs up.
    timeoutTokenDelayMs: config.ACQUIRER_TIMEOUT_MS * 3,
  };
  const server = createAcquirerServer({
    charges: createAcquirerSimulator(pool, simulated),
    refunds: createRefundSimulator(pool),
    holds: createHoldSimulator(pool, simulated),
    // Its books (Postgres) only: it never uses Redis or Kafka (DESIGN 109).
    readiness: () =>
      checkRequired(
        platform.checks,
        config.READINESS_TIMEOUT_MS,
        roleDependencies('acquirer', config),
      ),
    faults,
    // Its callers' bearer token and TLS (DESIGN 121), checked at boot (acquirer-link-settings.ts).
    ...(config.ACQUIRER_TOKEN === undefined
      ? {}
      : { auth: createTokenCheck(config.ACQUIRER_TOKEN, logger, config.OUTAGE_LOG_INTERVAL_MS) }),
    ...(config.ACQUIRER_TLS_CERT_FILE === undefined || config.ACQUIRER_TLS_KEY_FILE === undefined
      ? {}
      : {
          tls: {
            cert: readFileSync(config.ACQUIRER_TLS_CERT_FILE, 'utf8'),
            key: readFileSync(config.ACQUIRER_TLS_KEY_FILE, 'utf8'),
          },
        }),
  });
  // Settlement's keep-alive agent reuses connections: keep them open longer than its idle gap.
  server.keepAliveTimeout = 30_000;
  const port = await listen(server, config.ACQUIRER_PORT, config.ACQUIRER_HOST);
  logger.info(
    {
      host: config.ACQUIRER_HOST,
      port,
      tls: config.ACQUIRER_TLS_CERT_FILE !== undefined,
      token: config.ACQUIRER_TOKEN !== undefined,
    },
    'acquirer ready',
  );
  const listening = followDownFault(server, faults, logger, () =>
    listen(server, port, config.ACQUIRER_HOST),
  );
  // Its books past ACQUIRER_BOOKS_RETENTION_SECONDS (DESIGN 110).
  const reaper = startRetentionReaper(
    pool,
    logger,
    acquirerBookSweeps(config.ACQUIRER_BOOKS_RETENTION_SECONDS),
    { batch: config.RETENTION_REAPER_BATCH, intervalMs: config.RETENTION_REAPER_INTERVAL_MS },
  );
  return {
    name: 'acquirer',
    port,
    internalRoutes: faultRoutes(faults),
    close: async () => {
      faults.close();
      await reaper.stop();
      if (await listening()) await closeServer(server);
    },
  };
}

/**
 * `down` closes the listener and drops every connection (refused from then on); leaving it
 * listens again on the same port. Returns whether the server is listening now (for close).
 */
function followDownFault(
  server: Server,
  faults: AcquirerFaults,
  logger: Logger,
  relisten: () => Promise<number>,
): () => Promise<boolean> {
  let change: Promise<void> = Promise.resolve();
  let down = false;
  faults.onChange((fault) => {
    logger.warn({ fault }, 'acquirer fault set');
    const wantDown = fault.mode === 'down';
    change = change.then(async () => {
      if (wantDown === down) return;
      down = wantDown;
      if (wantDown) {
        server.close();
        server.closeAllConnections();
      } else {
        await relisten().catch((error: unknown) => {
          logger.error({ err: error }, 'acquirer could not listen again');
        });
      }
    });
  });
  return async () => {
    await change;
    return !down;
  };
}

function faultRoutes(faults: AcquirerFaults): InternalRoute[] {
  return [
    {
      method: 'GET',
      path: '/acquirer/fault',
      handle: () => Promise.resolve({ status: 200, body: faults.current() }),
    },
    {
      method: 'PUT',
      path: '/acquirer/fault',
      handle: (text) => {
        let fault: AcquirerFault;
        try {
          fault = faultRequest.parse(JSON.parse(text));
        } catch (error) {
          return Promise.resolve({ status: 400, body: { error: String(error) } });
        }
        faults.set(fault);
        return Promise.resolve({ status: 200, body: fault });
      },
    },
  ];
}
