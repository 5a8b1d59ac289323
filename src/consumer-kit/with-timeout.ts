/** Thrown when a bounded call did not settle in time. */
export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * `promise`, or a TimeoutError after `ms`. `onLate` receives the value if it arrives after the
 * timeout (e.g. a pooled client to release), so nothing leaks.
 */
export async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  onLate?: (value: T) => void,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new TimeoutError(`${what} took longer than ${ms} ms`));
      promise.then(
        (value) => onLate?.(value),
        () => undefined,
      );
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
