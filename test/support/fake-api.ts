import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stand-in answers a request with: a status and a JSON body. */
export type FakeAnswer = (req: IncomingMessage) => { status: number; body: unknown };

/**
 * Runs `use` against a stand-in API on 127.0.0.1 (port 0) that answers every request as
 * `answer` says, once its body was read: for showing that a load scenario's invariants fail a
 * run against an API that breaks them. The server is closed when `use` settles.
 */
export async function withFakeApi<T>(
  answer: FakeAnswer,
  use: (baseUrl: string) => Promise<T>,
): Promise<T> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const { status, body } = answer(req);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await use(`http://127.0.0.1:${String((server.address() as AddressInfo).port)}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
