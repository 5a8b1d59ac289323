import { describe, expect, it } from 'vitest';
import { createKeyedQueue } from '../../src/platform/resilience/keyed-queue.js';

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('keyed queue', () => {
  it('when three tasks share a key and one fails, then they run one at a time in order, the failure reaches only its caller, and the key is forgotten after', async () => {
    const queue = createKeyedQueue();
    const log: string[] = [];
    const [first, second, third] = [deferred(), deferred(), deferred()];
    const gates = [first, second, third];
    const tasks = gates.map((gate, i) =>
      queue.run('payment-1', async () => {
        log.push(`start ${i}`);
        await gate.promise;
        log.push(`end ${i}`);
        return i;
      }),
    );
    const other = queue.run('payment-2', () => Promise.resolve('other'));
    await expect(other).resolves.toBe('other');
    await Promise.resolve();
    expect(log).toEqual(['start 0']);
    first.reject(new Error('boom'));
    await expect(tasks[0]).rejects.toThrow('boom');
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['start 0', 'start 1']);
    second.resolve();
    third.resolve();
    await expect(Promise.all(tasks.slice(1))).resolves.toEqual([1, 2]);
    expect(log).toEqual(['start 0', 'start 1', 'end 1', 'start 2', 'end 2']);
    await new Promise((r) => setImmediate(r));
    expect(queue.size).toBe(0);
  });

  it('when the signal of a queued task is aborted before its turn, then it never runs, its caller gets the reason, and the tasks behind it still run', async () => {
    const queue = createKeyedQueue();
    const first = deferred();
    const ran: string[] = [];
    const running = queue.run('payment-1', async () => {
      ran.push('first');
      await first.promise;
    });
    const gone = new AbortController();
    const abandoned = queue.run(
      'payment-1',
      () => {
        ran.push('abandoned');
        return Promise.resolve();
      },
      gone.signal,
    );
    const last = queue.run('payment-1', () => {
      ran.push('last');
      return Promise.resolve('last');
    });
    gone.abort(new Error('request ended'));
    first.resolve();
    await running;
    await expect(abandoned).rejects.toThrow('request ended');
    await expect(last).resolves.toBe('last');
    expect(ran).toEqual(['first', 'last']);
  });
});
