import type { PlannedFault } from './fault-plan.js';
import type { RoleFleet } from './role-fleet.js';
import type { StackControl } from './stack-control.js';
import { sleep, type Timeline } from './timeline.js';

/** When a fault began and when the system was whole again (thawed, restarted, answering). */
export interface FaultWindow {
  fault: PlannedFault;
  startMs: number;
  endMs: number;
}

export interface FaultContext {
  fleet: RoleFleet;
  stack: StackControl;
  timeline: Timeline;
  /** Services stopped and not yet started again: the cleanup starts them on an abort. */
  stopped: Set<'redis' | 'postgres' | 'kafka' | 'kafka3'>;
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

async function brokerPid(stack: StackControl, node: number): Promise<number> {
  const pid = (await stack.pids('kafka3'))[node - 1];
  if (pid === undefined || pid === null) throw new Error(`kafka3 broker ${node} is not running`);
  return pid;
}
