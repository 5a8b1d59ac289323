import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on host:port (0 = a free port) and resolves with the port; rejects if it cannot. */
export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Stops accepting, lets in-flight requests finish, and closes idle keep-alive sockets at once. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.close((error) => {
      if (error) reject(error);
      else resolve();
    });
    // Idle keep-alive sockets would hold close() open until they time out.
    server.closeIdleConnections();
  });
}
