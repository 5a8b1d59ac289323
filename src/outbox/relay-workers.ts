import type { RelayDeps } from './relay-context.js';
import { createRelay, type Relay } from './relay.js';

/**
 * `count` relays in one process, sharing the pool, each with its own producer: while one waits
 * on Postgres another publishes (Node has one core; their awaits overlap). They coordinate through
 * the database exactly as relays in separate processes do. A notification wakes the first only;
 * the others join when a claim comes back full, i.e. when there is a backlog, so an idle or
 * lightly loaded process does not make every worker claim for every insert. `runOnce` and
 * `purgeOnce` use the first.
 */
export function createRelayWorkers(deps: RelayDeps, count: number): Relay {
  const workers: Relay[] = [];
  const wakeAll = () => {
    for (const worker of workers) worker.wake();
  };
  for (let index = 0; index < Math.max(1, count); index++) {
    workers.push(createRelay({ ...deps, onBacklog: wakeAll }));
  }
  const [first] = workers;
  if (!first) throw new Error('no relay worker');
  return {
    runOnce: first.runOnce,
    purgeOnce: first.purgeOnce,
    connect: async () => {
      await Promise.all(workers.map((worker) => worker.connect()));
    },
    wake: first.wake,
    run: async () => {
      await Promise.all(workers.map((worker) => worker.run()));
    },
    stop: async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
    },
  };
}
