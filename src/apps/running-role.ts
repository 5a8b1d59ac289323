import type { InternalRoute } from '../platform/lifecycle/internal-server.js';

/** A started process role: its name and how to stop it gracefully. */
export interface RunningRole {
  name: 'acquirer' | 'api' | 'relay' | 'settlement' | 'webhooks';
  close: () => Promise<void>;
  /**
   * Called first on SIGTERM: from then on the role says `draining` on /readyz and asks clients to
   * go elsewhere (Connection: close) while it still serves. Only roles behind a load balancer
   * have it; when one does, the shutdown waits SHUTDOWN_DRAIN_MS before `close`.
   */
  drain?: () => void;
  /** Operator routes the role adds to the process's internal listener (the acquirer's faults). */
  internalRoutes?: readonly InternalRoute[];
}
