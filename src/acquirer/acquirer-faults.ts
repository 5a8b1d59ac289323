import { z } from 'zod';

/**
 * The acquirer role's faults (issue 36 item 6), settable for tests and chaos through the admin
 * endpoint on its internal listener (`PUT /acquirer/fault`):
 *
 * - `down`: the listener is closed and every connection dropped (callers see refused connections);
 * - `unavailable`: every call is answered 503 with `Retry-After` before anything is processed;
 * - `hang`: calls are read and never answered (the caller's timeout ends them; nothing is done);
 * - `drop`: charges, refunds and the hold operations are done and recorded, then the connection
 *   is reset instead of answering (the books have it, the caller does not know); inquiries are
 *   answered;
 * - `slow`: every call waits `latency_ms` first.
 *
 * `duration_ms` clears the fault by itself after that long (a chaos phase that outlives its
 * driver ends anyway).
 */
export const faultModes = ['none', 'down', 'unavailable', 'hang', 'drop', 'slow'] as const;
export type FaultMode = (typeof faultModes)[number];

export const faultRequest = z
  .object({
    mode: z.enum(faultModes),
    retry_after_seconds: z.number().int().min(0).max(3_600).default(1),
    latency_ms: z.number().int().min(0).max(600_000).default(0),
    duration_ms: z.number().int().min(1).max(86_400_000).optional(),
  })
  .strict();

export type AcquirerFault = z.infer<typeof faultRequest>;

export interface AcquirerFaults {
  current: () => AcquirerFault;
  /** Sets the fault (and its timer, if it has a duration); listeners hear every change. */
  set: (fault: AcquirerFault) => void;
  onChange: (listener: (fault: AcquirerFault) => void) => void;
  /** Clears the timer (process shutdown). */
  close: () => void;
}

export const NO_FAULT: AcquirerFault = { mode: 'none', retry_after_seconds: 1, latency_ms: 0 };

export function createAcquirerFaults(): AcquirerFaults {
  let fault = NO_FAULT;
  let timer: NodeJS.Timeout | undefined;
  const listeners: ((fault: AcquirerFault) => void)[] = [];
  const apply = (next: AcquirerFault) => {
    clearTimeout(timer);
    timer = undefined;
    fault = next;
    if (next.duration_ms !== undefined && next.mode !== 'none') {
      timer = setTimeout(() => {
        apply(NO_FAULT);
      }, next.duration_ms);
      timer.unref();
    }
    for (const listener of listeners) listener(fault);
  };
  return {
    current: () => fault,
    set: apply,
    onChange: (listener) => listeners.push(listener),
    close: () => {
      clearTimeout(timer);
    },
  };
}
