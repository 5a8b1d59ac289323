import { Counter, Gauge } from 'prom-client';
import type { Logger } from '../platform/telemetry/logger.js';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import { createOutageLog } from '../platform/resilience/outage-log.js';

export type BreakerState = 'closed' | 'open' | 'half_open';

/** The gauge's values: 0 closed, 1 half-open (one probe), 2 open. */
const STATE_VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

const stateGauge = new Gauge({
  name: 'acquirer_breaker_state',
  help: 'The acquirer circuit breaker of this settlement process: 0 closed, 1 half-open (one probe), 2 open (no charge or refund claimed).',
  registers: [metricsRegistry],
});
const transitions = new Counter({
  name: 'acquirer_breaker_transitions_total',
  help: "The acquirer circuit breaker's state changes, by the state entered.",
  labelNames: ['to'] as const,
  registers: [metricsRegistry],
});

export interface BreakerOptions {
  /** Consecutive not-sent or unknown calls that open it. */
  failureThreshold: number;
  /** How long it stays open before one probe (at least the acquirer's Retry-After). */
  openMs: number;
  logger: Logger;
  outageLogIntervalMs: number;
  now?: () => number;
}

/**
 * The acquirer's circuit breaker in the settlement role (DESIGN 107), one per process, shared by
 * the charge and refund workers (the job engine's CallGate). Closed: every claim passes; a call
 * the acquirer answered (anything, a decline or a retryable error included) resets the count of
 * consecutive failures, a call that never reached it or whose outcome is unknown adds one;
 * `failureThreshold` in a row open it. Open: nothing is claimed (the backlog waits in Postgres,
 * spending no attempt), a job already claimed is put back unsent; after `openMs` (or the
 * acquirer's Retry-After, if longer) it is half-open: one job is claimed and called (the probe);
 * an answer closes the breaker, a failure opens it again. An outage costs a few log lines: the
 * breaker opening, the acquirer outage log's lines (one per interval), and the close.
 */
export function createAcquirerBreaker(options: BreakerOptions) {
  const now = options.now ?? Date.now;
  const { logger } = options;
  const outage = createOutageLog('acquirer', logger, options.outageLogIntervalMs);
  let state: BreakerState = 'closed';
  let failures = 0;
  let openedAt = 0;
  let reopenAt = 0;
  let probeAdmittedAt: number | null = null;
  let probeCalling = false;
  let probes = 0;
  const closeListeners: (() => void)[] = [];
  stateGauge.set(0);

  const enter = (next: BreakerState) => {
    state = next;
    stateGauge.set(STATE_VALUE[next]);
    transitions.inc({ to: next });
  };

  /** Open -> half-open once its time is up (read lazily: no timer). */
  const refresh = () => {
    if (state === 'open' && now() >= reopenAt) {
      enter('half_open');
      probeAdmittedAt = null;
      probeCalling = false;
    }
  };

  const open = (waitMs: number) => {
    const at = now();
    if (state === 'closed') {
      openedAt = at;
      probes = 0;
      logger.warn(
        { consecutive_failures: failures, open_ms: waitMs },
        'acquirer breaker opened: no charge or refund is claimed until a probe succeeds',
      );
    }
    reopenAt = at + waitMs;
    probeAdmittedAt = null;
    probeCalling = false;
    enter('open');
  };

  const close = () => {
    logger.info({ open_for_ms: now() - openedAt, probes }, 'acquirer breaker closed');
    failures = 0;
    enter('closed');
    for (const listener of closeListeners) listener();
  };

  return {
    get state(): BreakerState {
      refresh();
      return state;
    },
    get closed(): boolean {
      refresh();
      return state === 'closed';
    },
    admit(limit: number): number {
      refresh();
      if (state === 'closed') return limit;
      if (state === 'open') return 0;
      const at = now();
      if (probeAdmittedAt !== null && at - probeAdmittedAt < options.openMs) return 0;
      // A probe admitted that long ago and never heard from (its job ended before calling)
      // no longer holds the place.
      probeAdmittedAt = at;
      probeCalling = false;
      return Math.min(1, limit);
    },
    unused(): void {
      if (state === 'half_open' && !probeCalling) probeAdmittedAt = null;
    },
    blockedForMs(): number {
      refresh();
      if (state === 'closed') return 0;
      if (state === 'open') return Math.max(1, reopenAt - now());
      if (probeAdmittedAt === null) return 0;
      return Math.max(1, probeAdmittedAt + options.openMs - now());
    },
    tryCall(): boolean {
      refresh();
      if (state === 'closed') return true;
      if (state === 'open' || probeCalling) return false;
      probeCalling = true;
      probes++;
      return true;
    },
    record(delivery: 'answered' | 'not_sent' | 'unknown', error?: unknown): void {
      if (delivery === 'answered') {
        outage.succeeded();
        if (state === 'closed') failures = 0;
        else close();
        return;
      }
      outage.failed(describe(error), { delivery, breaker: state });
      const retryAfter = retryAfterOf(error);
      const waitMs = Math.max(options.openMs, retryAfter);
      if (state === 'closed') {
        failures++;
        if (failures >= options.failureThreshold) open(waitMs);
      } else if (state === 'half_open' && probeCalling) {
        open(waitMs);
      }
    },
    onClose(listener: () => void): void {
      closeListeners.push(listener);
    },
  };
}

export type AcquirerBreaker = ReturnType<typeof createAcquirerBreaker>;

function retryAfterOf(error: unknown): number {
  const ms = (error as { notBeforeMs?: unknown } | undefined)?.notBeforeMs;
  return typeof ms === 'number' ? ms : 0;
}

function describe(error: unknown): string {
  if (error && typeof error === 'object' && 'errorClass' in error) {
    const { errorClass, message } = error as { errorClass: unknown; message?: unknown };
    return `${String(errorClass)}: ${typeof message === 'string' ? message : ''}`;
  }
  return String(error);
}
