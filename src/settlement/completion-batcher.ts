import type { CompletionOutcome } from '../jobs/job-worker.js';
import type { Completion } from './settlement-job-store.js';

/** Records one payment's final answer; resolves with what that did (CompletionOutcome). */
export type CompletePayment = (completion: Completion) => Promise<CompletionOutcome>;

/** Most completions in one transaction: enough to amortise the commit, short enough to lock. */
const MAX_GROUP = 200;

interface Waiting {
  completion: Completion;
  resolve: (outcome: CompletionOutcome) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for the worker's completions: a completion that arrives while a group is being
 * written waits and goes into the next group, so under load many payments share one transaction
 * (record-wise statements, see completePayments) and when idle a lone completion is written at
 * once, never delayed by a timer. If a group's transaction fails, its completions are written
 * one by one, so one bad row fails only its own job.
 */
export function createCompletionBatcher(
  write: (completions: readonly Completion[]) => Promise<Map<string, CompletionOutcome>>,
): CompletePayment {
  let queue: Waiting[] = [];
  let writing = false;

  async function writeGroup(group: Waiting[]): Promise<void> {
    try {
      const outcomes = await write(group.map((w) => w.completion));
      for (const w of group) w.resolve(outcomes.get(w.completion.id) ?? 'lease_lost');
    } catch (error) {
      if (group.length === 1) {
        group[0]?.reject(error);
        return;
      }
      await Promise.all(group.map((w) => writeGroup([w])));
    }
  }

  async function drain(): Promise<void> {
    writing = true;
    while (queue.length > 0) {
      const group = queue.slice(0, MAX_GROUP);
      queue = queue.slice(MAX_GROUP);
      await writeGroup(group);
    }
    writing = false;
  }

  return (completion) =>
    new Promise<CompletionOutcome>((resolve, reject) => {
      queue.push({ completion, resolve, reject });
      if (!writing) void drain();
    });
}
