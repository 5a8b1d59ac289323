import type { OutageLog } from '../platform/resilience/outage-log.js';

export interface JobLoopDeps<J> {
  /** The job kind, for the log lines. */
  kind: string;
  concurrency: number;
  pollMs: number;
  /**
   * Where a failed claim goes: a Postgres outage fails every poll, and must cost a few lines,
   * not one (with its stack) per poll.
   */
  outage: OutageLog;
  /** Claims up to `limit` due jobs. */
  claim: (limit: number) => Promise<J[]>;
  /** Works one job; never rejects. */
  work: (job: J) => Promise<void>;
  /** When the earliest waiting job is due, if any. */
  nextDueAt: () => Promise<Date | null>;
  /**
   * Whether a finished job makes the loop claim again: `always` (the default), or
   * `while-backlog`: only while the last claim filled every slot it asked for or new work was
   * announced since (wake, adopt), for a kind whose intake claims its own jobs (claim on insert),
   * where a claim after each finish would mostly come back empty. Due retries and expired leases
   * are then found by the next wake-up, or by the poll.
   */
  claimAfterFinish?: 'always' | 'while-backlog';
  /**
   * How long claims are held back (the acquirer's breaker open, DESIGN 107): the loop sleeps
   * that long (or until woken) instead of claiming. Absent or 0: claim as usual.
   */
  blockedForMs?: () => number;
}

export interface JobLoop<J> {
  start: () => void;
  /** Stops claiming, lets in-flight jobs finish (bounded by the acquirer timeout). */
  stop: () => Promise<void>;
  /** New work arrived: look at once instead of at the next poll. */
  wake: () => void;
  /**
   * Holds up to `max` free slots for jobs an intake claims itself (claimed in the statement
   * that records them): the loop's claims leave them free. 0 unless the loop is running.
   */
  reserve: (max: number) => number;
  /** Starts jobs claimed into `reserved` slots, and frees the slots left over. */
  adopt: (jobs: readonly J[], reserved: number) => void;
}

/** A sleep that a wake-up ends early, and that is not lost when it arrives while awake. */
function createWakeableSleep(): { wake: () => void; sleep: (ms: number) => Promise<void> } {
  let signalled = false;
  let resolveSleep: (() => void) | undefined;
  return {
    wake: () => {
      signalled = true;
      resolveSleep?.();
    },
    sleep: async (ms) => {
      if (!signalled) {
        await new Promise<void>((resolve) => {
          resolveSleep = resolve;
          setTimeout(resolve, ms).unref();
        });
        resolveSleep = undefined;
      }
      signalled = false;
    },
  };
}

/**
 * Keeps up to `concurrency` jobs in flight and claims more as soon as one finishes: one slow
 * acquirer call (a 2 s timeout) occupies one slot, not the whole batch.
 */
export function createJobLoop<J>(deps: JobLoopDeps<J>): JobLoop<J> {
  const { concurrency, pollMs } = deps;
  const { sleep, wake: wakeLoop } = createWakeableSleep();
  const claimWhenFinished = deps.claimAfterFinish !== 'while-backlog';
  /** Unclaimed work may be waiting (the last claim was full, or work was announced since). */
  let backlog = true;
  const wake = () => {
    backlog = true;
    wakeLoop();
  };
  const inFlight = new Set<Promise<void>>();
  let stopped = true;
  let reserved = 0;
  let loop: Promise<void> = Promise.resolve();

  const busySlots = () => inFlight.size + reserved;

  function startJob(job: J): void {
    const running = deps.work(job).finally(() => {
      inFlight.delete(running);
      if (claimWhenFinished || backlog) wakeLoop();
    });
    inFlight.add(running);
  }

  async function fillSlots(): Promise<number> {
    const free = concurrency - busySlots();
    if (free <= 0) return 0;
    backlog = false;
    const jobs = await deps.claim(free);
    if (jobs.length === free) backlog = true;
    for (const job of jobs) startJob(job);
    return jobs.length;
  }

  /** Nothing claimable now: sleep until the earliest due job, new work, or the poll interval. */
  async function sleepUntilDue(): Promise<void> {
    const due = await deps.nextDueAt().catch(() => null);
    const untilDue = due ? due.getTime() - Date.now() : pollMs;
    await sleep(Math.max(5, Math.min(pollMs, untilDue)));
  }

  async function run(): Promise<void> {
    while (!stopped) {
      const blocked = deps.blockedForMs?.() ?? 0;
      if (blocked > 0) {
        await sleep(Math.max(5, Math.min(pollMs * 20, blocked)));
        continue;
      }
      try {
        const claimed = await fillSlots();
        deps.outage.succeeded();
        // Every slot busy: wait for one to free (or new work). Nothing due: sleep until the
        // next job is. Otherwise claim again at once.
        if (busySlots() >= concurrency) await sleep(pollMs);
        else if (claimed === 0) await sleepUntilDue();
      } catch (error) {
        backlog = true;
        deps.outage.failed(error, { action: `${deps.kind} claim failed; retrying` });
        await new Promise((r) => setTimeout(r, pollMs));
      }
    }
    // Jobs adopted while stopping run to their end too.
    while (inFlight.size > 0) await Promise.all(inFlight);
  }

  return {
    start: () => {
      if (!stopped) return;
      stopped = false;
      loop = run();
    },
    stop: async () => {
      stopped = true;
      wake();
      await loop;
    },
    wake,
    reserve: (max) => {
      if (stopped) return 0;
      const taken = Math.max(0, Math.min(max, concurrency - busySlots()));
      reserved += taken;
      return taken;
    },
    adopt: (jobs, slots) => {
      reserved -= slots;
      for (const job of jobs) startJob(job);
      // Slots left over: the loop may claim into them now.
      if (jobs.length < slots) wake();
    },
  };
}
