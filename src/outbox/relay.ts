import { purgePublished } from './outbox-repository.js';
import { createRelayContext, type RelayDeps, type RelayRunResult } from './relay-context.js';
import { createLoopWaiter, PURGE_BATCH_SIZE, runRelayLoop } from './relay-loop.js';
import { runOnce } from './relay-round.js';

export interface Relay {
  /** Claims one batch, publishes it, marks it. Not reentrant: one round at a time. */
  runOnce: () => Promise<RelayRunResult>;
  /** Deletes one batch of rows published longer than the retention ago; returns how many. */
  purgeOnce: (limit?: number) => Promise<number>;
  /** Connects the producer (for readiness); rounds connect by themselves when needed. */
  connect: () => Promise<void>;
  /** A hint that rows may be waiting (a notification); cuts an idle wait short. */
  wake: () => void;
  /** Loops until stop(): rounds while there is work, idle waits otherwise, backoff on failures. */
  run: () => Promise<void>;
  /** Ends the loop after its current round and disconnects the producer. */
  stop: () => Promise<void>;
}

/**
 * One relay: its own producer and loop over the steps claim -> publish -> record the outcome
 * (mark published, count a failed attempt or park, release): one round in relay-round.ts, the
 * loop (rounds back to back, idle waits, backoff, purge) in relay-loop.ts, the send in
 * publish-batch.ts.
 */
export function createRelay(deps: RelayDeps): Relay {
  const ctx = createRelayContext(deps);
  const waiter = createLoopWaiter();
  let loop: Promise<void> | undefined;
  return {
    runOnce: () => runOnce(ctx),
    purgeOnce: (limit = PURGE_BATCH_SIZE) =>
      purgePublished(ctx.db, ctx.config.OUTBOX_RETENTION_SECONDS, limit),
    connect: async () => {
      await ctx.producer.connected();
    },
    wake: waiter.wake,
    run: () => (loop ??= runRelayLoop(ctx, waiter)),
    stop: async () => {
      waiter.stop();
      await loop;
      await ctx.producer.close();
    },
  };
}

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
