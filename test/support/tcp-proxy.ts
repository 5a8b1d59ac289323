import net from 'node:net';

/** Which bytes a frozen proxy holds back: everything, or only the service's answers. */
export type FreezeMode = 'both' | 'responses';

/**
 * A TCP proxy in front of a real service, for fault injection without disturbing the service
 * other test files share:
 * - `stop()` refuses new connections and cuts open ones (the service looks down), `start()`
 *   brings it back on the same port;
 * - `freeze()` makes the service look frozen (SIGSTOP, a GC pause, a partition): connections
 *   are still accepted and read, nothing is forwarded in either direction (or, with
 *   'responses', only the service's answers are held: it works but its answers never arrive),
 *   and nothing is closed. `thaw()` delivers what was held, in order, as a resumed process
 *   would; a client that gave up meanwhile has its bytes delivered and then its connection
 *   closed, like the kernel buffer a stopped process reads on resume;
 * - `setLatency(ms)` delays every chunk in both directions.
 */
export interface TcpProxy {
  port: number;
  stop: () => Promise<void>;
  start: () => Promise<void>;
  freeze: (mode?: FreezeMode) => void;
  thaw: () => void;
  setLatency: (ms: number) => void;
  close: () => Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const flushers = new Set<() => void>();
  let server: net.Server | null = null;
  let port = 0;
  let frozen: FreezeMode | null = null;
  let latencyMs = 0;

  /** Forwards `from` to `to`, holding bytes (and the end) while `held()` says so. */
  const forward = (from: net.Socket, to: net.Socket, held: () => boolean) => {
    const queue: Buffer[] = [];
    let ended = false;
    const send = (chunk: Buffer) => {
      if (latencyMs === 0) to.write(chunk);
      else setTimeout(() => to.write(chunk), latencyMs);
    };
    const flush = () => {
      if (held()) return;
      while (queue.length > 0) send(queue.shift() as Buffer);
      if (ended) {
        flushers.delete(flush);
        const end = () => to.end();
        if (latencyMs === 0) end();
        else setTimeout(end, latencyMs);
      }
    };
    flushers.add(flush);
    from.on('data', (chunk: Buffer) => {
      if (held() || queue.length > 0) queue.push(chunk);
      else send(chunk);
    });
    const finish = () => {
      if (ended) return;
      ended = true;
      flush();
    };
    from.on('end', finish);
    from.on('close', finish);
  };

  const listen = async () => {
    const s = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        // A reset while thawed cuts both sides, as before; while frozen the other side is
        // closed once the held bytes are delivered (see forward).
        socket.on('error', () => {
          if (frozen === null) {
            client.destroy();
            upstream.destroy();
          }
        });
      }
      forward(client, upstream, () => frozen === 'both');
      forward(upstream, client, () => frozen !== null);
    });
    await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
    port = (s.address() as net.AddressInfo).port;
    server = s;
  };

  const stop = async () => {
    const s = server;
    server = null;
    frozen = null;
    for (const socket of sockets) socket.destroy();
    flushers.clear();
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
    freeze: (mode = 'both') => {
      frozen = mode;
    },
    thaw: () => {
      frozen = null;
      for (const flush of [...flushers]) flush();
    },
    setLatency: (ms) => {
      latencyMs = ms;
    },
    close: stop,
  };
}
