/**
 * The relay loop's waiting: a wake-up cuts an idle wait short, never a backoff; stop cuts both
 * and makes every later wait return at once.
 */
export interface LoopWaiter {
  /** Waits `ms`; an idle wait ends early on wake(), and is skipped if woken since clearWake(). */
  pause: (ms: number, idle: boolean) => Promise<void>;
  /** A hint that work may be waiting. */
  wake: () => void;
  /** Forgets earlier wake-ups (called before a round: one arriving during it counts). */
  clearWake: () => void;
  stop: () => void;
  isStopped: () => boolean;
}

export function createLoopWaiter(): LoopWaiter {
  let stopped = false;
  let woken = false;
  let endIdleWait: (() => void) | undefined;
  let endAnyWait: (() => void) | undefined;

  function pause(ms: number, idle: boolean): Promise<void> {
    if (stopped || (idle && woken)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        endIdleWait = undefined;
        endAnyWait = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      endAnyWait = done;
      if (idle) endIdleWait = done;
    });
  }

  return {
    pause,
    wake: () => {
      woken = true;
      endIdleWait?.();
    },
    clearWake: () => {
      woken = false;
    },
    stop: () => {
      stopped = true;
      endAnyWait?.();
    },
    isStopped: () => stopped,
  };
}
