import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenForOutbox } from '../../src/outbox/outbox-listener.js';
import { capturedLogger } from '../support/captured-logger.js';

describe('outbox listener while Postgres is unreachable', () => {
  it('when every reconnect attempt fails for 2 s, then one warning for the outage, not one per attempt', async () => {
    const { lines, logger } = capturedLogger();
    // Stands in for a Postgres that is going down: every connection is cut at once.
    let attempts = 0;
    const server = createServer((socket) => {
      attempts++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const listener = listenForOutbox({
      connectionString: `postgres://nobody:nothing@127.0.0.1:${port}/none`,
      logger,
      onNotify: () => undefined,
      applicationName: 'listener-outage-test',
    });
    try {
      // The backoff starts at 100 ms: 2 s hold several attempts.
      await new Promise((r) => setTimeout(r, 2_000));
    } finally {
      await listener.close();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    }
    expect(attempts).toBeGreaterThanOrEqual(3);
    const warnings = lines.filter((line) => Number(line.level) >= 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      msg: 'outbox listener unavailable',
      dependency: 'outbox listener',
      attempts: 1,
    });
  });
});
