import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { checkReadiness } from '../../platform/readiness.js';
import type { Platform } from '../../platform/platform.js';
import type { RunningRole } from '../running-role.js';
import { buildApp } from './app.js';

/** Serves the HTTP API; closing stops accepting, drains in-flight requests, then resolves. */
export async function startApi(platform: Platform): Promise<RunningRole & { port: number }> {
  const { config, logger } = platform;
  const app = buildApp({
    logger,
    readiness: () => checkReadiness(platform.checks, config.READINESS_TIMEOUT_MS),
  });
  const server = createServer(app);
  /** Slightly above common load-balancer idle timeouts (60 s), so the proxy closes first. */
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  logger.info({ role: 'api', host: config.HOST, port }, 'api listening');
  return {
    name: 'api',
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => {
          if (error) reject(error);
          else resolve();
        });
        // Idle keep-alive sockets would hold close() open until they time out.
        server.closeIdleConnections();
      }),
  };
}
