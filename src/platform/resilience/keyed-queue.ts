/**
 * Runs tasks one at a time per key, in arrival order, within this process; tasks of different
 * keys run concurrently. A key's entry lives only while it has work, so the map holds at most
 * what is in flight.
 */
export interface KeyedQueue {
  /**
   * Runs `task` after the key's earlier tasks. When `signal` is aborted before the task's turn
   * comes (its caller has gone), the task never runs and the promise rejects with
   * `signal.reason`; once started, a task runs to its end.
   */
  run<T>(key: string, task: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Keys with work queued or running (tests, metrics). */
  readonly size: number;
}

export function createKeyedQueue(): KeyedQueue {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run<T>(key: string, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      const turn = (): Promise<T> =>
        signal?.aborted ? Promise.reject(signal.reason as Error) : task();
      // The next task starts when this one settles, whether it succeeded or not.
      const result = previous.then(turn, turn);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    get size() {
      return tails.size;
    },
  };
}
