import { setTimeout as sleep } from 'node:timers/promises';
import type { Answer, Step } from '../../k6/scenarios/careful-client.js';
import type { Transport } from './http-transport.js';

/** The run is ending: an iteration cut short by it is not judged. */
export class Stopped extends Error {
  constructor() {
    super('stopped');
    this.name = 'Stopped';
  }
}

/**
 * Runs a scenario's generator to its end, asynchronously: each http step sends its requests
 * together and hands back their answers in order; each sleep step waits. `stop` ends it at the
 * next step (a sleep or a request in flight ends at once) with `Stopped`.
 */
export async function driveSteps<T>(
  steps: Generator<Step, T, Answer[]>,
  transport: Transport,
  stop: AbortSignal,
): Promise<T> {
  let next = steps.next();
  while (!next.done) {
    if (stop.aborted) {
      steps.return(undefined as T);
      throw new Stopped();
    }
    const step = next.value;
    if (step.kind === 'sleep') {
      try {
        await sleep(step.seconds * 1000, undefined, { signal: stop });
      } catch {
        continue; // stopped while asleep: the check above ends it
      }
      next = steps.next([]);
      continue;
    }
    const answers = await Promise.all(step.requests.map((r) => transport.send(r, stop)));
    if (answers.some((answer) => answer === null)) continue;
    next = steps.next(answers as Answer[]);
  }
  return next.value;
}
