import net from 'node:net';

/**
 * A TCP proxy in front of a real service, for fault injection without disturbing the service
 * other test files share: `stop()` refuses new connections and cuts open ones (the service
 * looks down to whoever connects through the proxy), `start()` brings it back on the same port.
 * `freeze()` is the gray failure: connections stay open but nothing passes either way (a hung
 * server or a black-holed network) until `thaw()`; bytes sent meanwhile are lost.
 */
export interface TcpProxy {
  port: number;
  stop: () => Promise<void>;
  start: () => Promise<void>;
  freeze: () => void;
  thaw: () => void;
  close: () => Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  let frozen = false;

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
      // Forwarded by hand rather than piped so that a frozen proxy can swallow bytes.
      const forward = (from: net.Socket, to: net.Socket) => {
        from.on('data', (chunk: Buffer) => {
          if (!frozen) to.write(chunk);
        });
        from.on('end', () => to.end());
      };
      forward(client, upstream);
      forward(upstream, client);
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
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
    },
    close: stop,
  };
}
