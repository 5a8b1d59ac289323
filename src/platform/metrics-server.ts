import { createServer } from 'node:http';
import { closeServer, listen } from './http-listen.js';
import type { Logger } from './logger.js';
import { metricsRegistry } from './metrics.js';

export interface MetricsServer {
  port: number;
  close: () => Promise<void>;
}

/**
 * GET /metrics for processes that do not run the API (which serves it on its own port):
 * a bare node:http server, nothing else on it. Port 0 picks a free port; the port is logged.
 */
export async function startMetricsServer(
  options: { host: string; port: number },
  logger: Logger,
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metricsRegistry.metrics().then(
      (body) => {
        res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(body);
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'metrics collection failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  const port = await listen(server, options.port, options.host);
  logger.info({ host: options.host, port }, 'metrics listening');
  return { port, close: () => closeServer(server) };
}
