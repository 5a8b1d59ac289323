import net from 'node:net';

/**
 * A TCP proxy in front of a real service, for fault injection without disturbing the service
 * other test files share: `stop()` refuses new connections and cuts open ones (the service
 * looks down to whoever connects through the proxy), `start()` brings it back on the same port.
 */
export interface TcpProxy {
  port: number;
  stop: () => Promise<void>;
  start: () => Promise<void>;
  close: () => Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;

  const listen = async () => {
    const s = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
    port = (s.address() as net.AddressInfo).port;
    server = s;
  };

  const stop = async () => {
    const s = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    if (s)
      await new Promise<void>((resolve) =>
        s.close(() => {
          resolve();
        }),
      );
  };

  await listen();
  return {
    port,
    stop,
    start: async () => {
      if (!server) await listen();
    },
    close: stop,
  };
}
