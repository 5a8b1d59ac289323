import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listen } from './http-listen.js';
import type { Logger } from '../telemetry/logger.js';
import { metricsRegistry } from '../telemetry/metrics.js';
import type { ReadinessReport } from './readiness.js';

/**
 * An operator's route a role adds to its internal listener (the acquirer's fault switch): the
 * request body as text in, a status and a JSON body out.
 */
export interface InternalRoute {
  method: 'GET' | 'PUT';
  path: string;
  handle: (body: string) => Promise<{ status: number; body: unknown }>;
}

export interface InternalServer {
  port: number;
  close: () => Promise<void>;
}

/**
 * The internal listener of every process, the API included: GET /metrics (Prometheus), GET
 * /readyz with each dependency's state and error text, GET /healthz. It binds to a loopback or
 * cluster-internal address (INTERNAL_HOST), never to the public port, because metrics and
 * dependency errors describe the deployment. A bare node:http server: nothing else runs on it.
 */
export async function startInternalServer(
  options: {
    host: string;
    port: number;
    readiness: () => Promise<ReadinessReport>;
    routes?: readonly InternalRoute[];
  },
  logger: Logger,
): Promise<InternalServer> {
  const fail = (res: ServerResponse, what: string) => (error: unknown) => {
    logger.warn({ err: error }, `${what} failed`);
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`${what} failed\n`);
  };
  const server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    const route = options.routes?.find((r) => r.method === req.method && r.path === path);
    if (route) {
      serveRoute(route, req, res, fail(res, `${route.method} ${route.path}`));
    } else if (req.method !== 'GET') {
      res
        .writeHead(405, { 'content-type': 'text/plain', allow: 'GET' })
        .end('method not allowed\n');
    } else if (path === '/metrics') {
      metricsRegistry.metrics().then(
        (body) => {
          res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(body);
        },
        fail(res, 'metrics collection'),
      );
    } else if (path === '/readyz') {
      options.readiness().then(
        (report) => {
          res
            .writeHead(report.status === 'ready' ? 200 : 503, {
              'content-type': 'application/json',
            })
            .end(JSON.stringify(report));
        },
        fail(res, 'readiness check'),
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  const port = await listen(server, options.port, options.host);
  logger.info({ host: options.host, port }, 'internal listener ready');
  return { port, close: () => closeServer(server) };
}

function serveRoute(
  route: InternalRoute,
  req: IncomingMessage,
  res: ServerResponse,
  fail: (error: unknown) => void,
): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    route.handle(Buffer.concat(chunks).toString('utf8')).then(({ status, body }) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }, fail);
  });
}
