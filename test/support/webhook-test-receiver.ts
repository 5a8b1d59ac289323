import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request the receiver got. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() when it arrived. */
  at: number;
}

/** The answer to a request: a status (and headers), or none at all (`hang`). */
export type ReceiverAnswer = { status: number; headers?: Record<string, string> } | 'hang';

/**
 * Answers a request; `nth` counts this path's requests from 1. Default: 204 for everything.
 */
export type Responder = (request: ReceivedWebhook, nth: number) => ReceiverAnswer;

export interface WebhookTestReceiver {
  /** The URL of `path` on this receiver (http://127.0.0.1:port/path). */
  url: (path: string) => string;
  /** Every request, in arrival order. */
  received: ReceivedWebhook[];
  /** The requests to `path`. */
  at: (path: string) => ReceivedWebhook[];
  respond: (responder: Responder) => void;
  close: () => Promise<void>;
}

/** An HTTP receiver on 127.0.0.1 that records every webhook and answers as told. */
export async function startWebhookTestReceiver(
  responder: Responder = () => ({ status: 204 }),
): Promise<WebhookTestReceiver> {
  let respond = responder;
  const received: ReceivedWebhook[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedWebhook = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
      };
      received.push(request);
      const nth = received.filter((r) => r.path === request.path).length;
      const answer = respond(request, nth);
      if (answer === 'hang') return;
      res.writeHead(answer.status, answer.headers).end();
    });
  });
  // Idle keep-alive sockets stay open for the whole test: Node's 5 s default closes one while the
  // delivery worker may be sending on it again, and that request fails with ECONNRESET instead of
  // getting the answer (or the hang) the test set up.
  server.keepAliveTimeout = 120_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${String(port)}${path}`,
    received,
    at: (path) => received.filter((r) => r.path === path),
    respond: (next) => {
      respond = next;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
