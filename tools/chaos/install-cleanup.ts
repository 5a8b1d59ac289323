import { isRunning, type RunningLoad } from './load-processes.js';
import type { RoleFleet } from './role-fleet.js';
import type { FaultContext } from './run-fault.js';
import type { StackControl } from './stack-control.js';

/**
 * Whatever ends the run (an error, Ctrl-C, SIGTERM), frozen services are thawed first, stopped
 * ones started again, and every process chaos started is stopped. On a normal end `done()`
 * only removes the handlers (main has already stopped everything).
 */
export function installCleanup(
  stack: StackControl,
  fleet: RoleFleet,
  loads: readonly RunningLoad[],
  ctx: FaultContext,
): { run: () => Promise<void>; done: () => void } {
  let ran = false;
  const lastResort = () => {
    stack.thawAllNow();
    fleet.killAllNow();
    for (const load of loads) if (isRunning(load)) load.child.kill('SIGKILL');
  };
  const run = async () => {
    if (ran) return;
    ran = true;
    stack.thawAllNow();
    for (const load of loads) if (isRunning(load)) load.child.kill('SIGTERM');
    for (const service of ctx.stopped) {
      process.stderr.write(`chaos: starting ${service} again (stopped by this run)\n`);
      await stack.start(service).catch((error: unknown) => {
        process.stderr.write(`chaos: could not start ${service}: ${String(error)}\n`);
      });
    }
    await fleet.stopAll();
    await ctx.probe.db.end().catch(() => undefined);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(
      `chaos: ${signal}: thawing, restarting and stopping what this run started\n`,
    );
    void run().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.on('exit', lastResort);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    run,
    done: () => {
      ran = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
