import type { AddressInfo } from 'node:net';
import { createAcquirerFaults, type AcquirerFaults } from '../../src/acquirer/acquirer-faults.js';
import { createAcquirerServer } from '../../src/acquirer/acquirer-http-server.js';
import { createAcquirerSimulator } from '../../src/acquirer/acquirer-simulator.js';
import { createHoldSimulator } from '../../src/acquirer/hold-simulator.js';
import { createRefundSimulator } from '../../src/acquirer/refund-simulator.js';
import type { TestDatabase } from './isolation.js';

export interface SimulatorServer {
  /** http://127.0.0.1:<port> of the acquirer's HTTP server. */
  url: string;
  /** Its faults (down, unavailable, hang, drop, slow), set directly by the test. */
  faults: AcquirerFaults;
  close: () => Promise<void>;
}

/**
 * The acquirer role's HTTP server on `db`, its simulators on the acquirer's own login (as
 * deployed), without random failures or latency; `tok_timeout` answers after 5 s.
 */
export async function startSimulatorServer(db: TestDatabase): Promise<SimulatorServer> {
  const pool = db.login('acquirer');
  const faults = createAcquirerFaults();
  const simulated = { latencyMs: 0, transientFailureRate: 0, timeoutTokenDelayMs: 5_000 };
  const server = createAcquirerServer({
    charges: createAcquirerSimulator(pool, simulated),
    refunds: createRefundSimulator(pool),
    holds: createHoldSimulator(pool, simulated),
    faults,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    faults,
    close: async () => {
      faults.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
