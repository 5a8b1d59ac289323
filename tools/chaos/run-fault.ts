import {
  dueLetters,
  startExhaustingWork,
  waitForDrain,
  waitUntilExhausted,
  type DeadLetterProbe,
  type DueLetters,
  waitForFailedSend,
} from './dead-letter-fault.js';
import { acquirerFault } from './acquirer-fault.js';
import { killLeader } from './leader-kill.js';
import type { PlannedFault } from './fault-plan.js';
import type { FaultWindow } from './fault-window.js';
import { pauseHoldingClaim, publishedSince } from './relay-pause.js';
import { rollingRestart, type ReplacedProcess } from './rolling-restart.js';
import type { RoleFleet } from './role-fleet.js';
import type { StackControl } from './stack-control.js';
import { sleep, type Timeline } from './timeline.js';

export interface FaultContext {
  fleet: RoleFleet;
  stack: StackControl;
  timeline: Timeline;
  /** Services stopped and not yet started again: the cleanup starts them on an abort. */
  stopped: Set<'redis' | 'postgres' | 'kafka' | 'kafka3'>;
  /** The three-node Kafka (`--kafka3`) rather than the single broker. */
  kafka3: boolean;
  /** RELAY_LEASE_MS of the run's relays: a paused relay is held past it. */
  relayLeaseMs: number;
  /** The database, API and key the dead-letter freeze works with. */
  probe: DeadLetterProbe;
  /** What the rolling restart did, process by process (set by it). */
  rolled?: ReplacedProcess[];
  /** The acquirer's internal listener (PUT /acquirer/fault), once it runs. */
  acquirerAdminUrl: string;
  /** The owner's environment of the run: the HA faults find leaders with its Kafka settings. */
  env: NodeJS.ProcessEnv;
}

/** Applies one fault, holds it, undoes it (thaw, restart, start), noting each step. */
export async function runFault(fault: PlannedFault, ctx: FaultContext): Promise<FaultWindow> {
  const { fleet, stack, timeline } = ctx;
  const holdMs = fault.holdSeconds * 1000;
  const startMs = timeline.now();
  const { action } = fault;
  switch (action.kind) {
    case 'kill-role': {
      const name = `${action.role}-1`;
      timeline.note(`SIGKILL ${name} (pid ${fleet.pid(name) ?? '-'})`);
      await fleet.kill(name);
      await sleep(holdMs);
      const readyMs = await fleet.start(name);
      timeline.note(`${name} restarted (pid ${fleet.pid(name) ?? '-'}), ready in ${readyMs} ms`);
      break;
    }
    case 'freeze': {
      const [pid] = await stack.pids(action.service);
      if (pid === undefined || pid === null) throw new Error(`${action.service} is not running`);
      const pids = stack.freeze(pid, action.service === 'postgres');
      timeline.note(
        `SIGSTOP ${action.service} (${pids.length === 1 ? `pid ${pid}` : `${pids.length} processes`}) for ${fault.holdSeconds} s`,
      );
      try {
        await sleep(holdMs);
      } finally {
        stack.thaw(pids);
      }
      timeline.note(`SIGCONT ${action.service}`);
      break;
    }
    case 'stop': {
      timeline.note(`stop ${action.service} (scripts/stack.sh stop ${action.service})`);
      ctx.stopped.add(action.service);
      await stack.stop(action.service);
      timeline.note(`${action.service} stopped; down for ${fault.holdSeconds} s`);
      await sleep(holdMs);
      const before = timeline.now();
      await stack.start(action.service);
      ctx.stopped.delete(action.service);
      timeline.note(`${action.service} started, answering after ${timeline.now() - before} ms`);
      break;
    }
    case 'pause-role': {
      const name = `${action.role}-1`;
      const paused = await pauseHoldingClaim(fleet, name, ctx.probe.db);
      timeline.note(
        `SIGSTOP ${name} (pid ${paused.pid}, try ${paused.tries}) for ${fault.holdSeconds} s, past its lease (${ctx.relayLeaseMs} ms), ` +
          `holding ${paused.heldRows.length} claimed outbox rows`,
      );
      let published = 0;
      try {
        await sleep(holdMs);
        published = await publishedSince(ctx.probe.db, paused.heldRows).catch(() => -1);
      } finally {
        fleet.resume(name);
      }
      timeline.note(
        `SIGCONT ${name}: of the ${paused.heldRows.length} rows it held, ${published < 0 ? '?' : published} published meanwhile by the other relay; ` +
          'it sends only after checking its lease (a send it was stopped in after that check may land late: verify counts such stale copies)',
      );
      break;
    }
    case 'freeze-dead-letters':
      return freezeWhileDeadLettersDue(fault, ctx);
    case 'acquirer-fault':
      return acquirerFault(fault, action.mode, {
        adminUrl: ctx.acquirerAdminUrl,
        db: ctx.probe.db,
        timeline,
      });
    case 'kill-leader':
      return killLeader(fault, action.target, ctx);
    case 'rolling-restart':
      ctx.rolled = await rollingRestart(fleet, timeline);
      break;
    case 'freeze-broker': {
      const pid = await brokerPid(stack, action.node);
      const pids = stack.freeze(pid, false);
      timeline.note(`SIGSTOP kafka3 broker ${action.node} (pid ${pid}) for ${fault.holdSeconds} s`);
      try {
        await sleep(holdMs);
      } finally {
        stack.thaw(pids);
      }
      timeline.note(`SIGCONT kafka3 broker ${action.node}`);
      break;
    }
    case 'kill-broker': {
      const pid = await brokerPid(stack, action.node);
      timeline.note(`SIGKILL kafka3 broker ${action.node} (pid ${pid})`);
      ctx.stopped.add('kafka3');
      stack.kill(pid);
      await sleep(holdMs);
      const before = timeline.now();
      await stack.start('kafka3');
      ctx.stopped.delete('kafka3');
      timeline.note(
        `kafka3 broker ${action.node} restarted, cluster answering after ${timeline.now() - before} ms`,
      );
      break;
    }
  }
  return { fault, startMs, endMs: timeline.now() };
}

/**
 * Starts charges and refunds that will exhaust, freezes every broker once their jobs made a
 * first attempt, holds the freeze at least `holdSeconds`, until they used their attempts (their
 * dead letters are due then) and until a bounded dead-letter send failed, counts the letters
 * waiting, thaws, and notes how long the letters due at the thaw took to reach the topic. The
 * window is the freeze itself.
 */
async function freezeWhileDeadLettersDue(
  fault: PlannedFault,
  ctx: FaultContext,
): Promise<FaultWindow> {
  const { stack, timeline, probe } = ctx;
  const work = await startExhaustingWork(probe, timeline);
  const brokers = (await stack.pids(ctx.kafka3 ? 'kafka3' : 'kafka')).filter(
    (pid): pid is number => pid !== null,
  );
  if (brokers.length === 0) throw new Error('kafka is not running');
  const startMs = timeline.now();
  const frozen = brokers.flatMap((pid) => stack.freeze(pid, false));
  timeline.note(
    `SIGSTOP Kafka (pid ${brokers.join(', ')}) for at least ${fault.holdSeconds} s, until their dead letters are due`,
  );
  let exhausted = false;
  let failedSendMs: number | null = null;
  let due: DueLetters | null = null;
  try {
    await sleep(fault.holdSeconds * 1000);
    exhausted = await waitUntilExhausted(probe, work);
    failedSendMs = await waitForFailedSend(probe);
    due = await dueLetters(probe);
  } finally {
    stack.thaw(frozen);
  }
  const endMs = timeline.now();
  timeline.note(
    `SIGCONT Kafka after ${((endMs - startMs) / 1000).toFixed(1)} s: ` +
      `${exhausted ? 'every one exhausted' : 'NOT every one exhausted'}, ` +
      `${failedSendMs === null ? 'no dead-letter send failed' : 'a dead-letter send failed'}; ` +
      `${due.unpublished} dead letters unpublished (${due.failedSends} after a failed send), ` +
      `${due.exhaustedRefunds} exhausted refunds waiting for their letter`,
  );
  const drainMs = await waitForDrain(probe, due, work);
  timeline.note(
    drainMs === null
      ? 'dead letters due at the thaw: NOT all on the topic within 60 s'
      : `dead letters due at the thaw: all on the topic ${drainMs} ms after it`,
  );
  return { fault, startMs, endMs };
}

async function brokerPid(stack: StackControl, node: number): Promise<number> {
  const pid = (await stack.pids('kafka3'))[node - 1];
  if (pid === undefined || pid === null) throw new Error(`kafka3 broker ${node} is not running`);
  return pid;
}
