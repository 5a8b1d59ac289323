/** A named dependency probe; it throws when the dependency cannot serve. */
export interface DependencyCheck {
  name: string;
  check: () => Promise<void>;
}

export interface CheckResult {
  name: string;
  status: 'up' | 'down';
  /**
   * Whether the process needs it to do its job (its readiness follows it); false: listed for
   * the operator, but the process serves without it (Redis for a fail-open API). Set when the
   * report was asked with `required`.
   */
  required?: boolean;
  latency_ms: number;
  error?: string;
}

export interface ReadinessReport {
  /** `draining`: shutting down; the process still serves but asks to be sent nothing new. */
  status: 'ready' | 'not_ready' | 'draining';
  checks: CheckResult[];
}

/** A readiness probe that answers `draining` (no checks run) once `drain()` was called. */
export interface DrainableReadiness {
  readiness: () => Promise<ReadinessReport>;
  drain: () => void;
  draining: () => boolean;
}

/**
 * Wraps a probe so a shutdown can flip it: from `drain()` on, every answer is `draining` (503),
 * at once and without asking the dependencies, so a load balancer stops sending before the
 * listener closes (DESIGN: rolling restarts).
 */
export function drainableReadiness(probe: () => Promise<ReadinessReport>): DrainableReadiness {
  let draining = false;
  return {
    readiness: () => (draining ? Promise.resolve({ status: 'draining', checks: [] }) : probe()),
    drain: () => {
      draining = true;
    },
    draining: () => draining,
  };
}

/**
 * Runs every check concurrently, each bounded by `timeoutMs`, and never throws. With `required`
 * (dependency names), only those decide the status and each result says whether it is one; the
 * others are still probed and listed (the internal health detail). Without it, every check is.
 */
export async function checkReadiness(
  checks: readonly DependencyCheck[],
  timeoutMs: number,
  required?: readonly string[],
): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async (check) => {
      const result = await runCheck(check, timeoutMs);
      return required === undefined
        ? result
        : { ...result, required: required.includes(check.name) };
    }),
  );
  const deciding = results.filter((result) => result.required !== false);
  return {
    status: deciding.every((result) => result.status === 'up') ? 'ready' : 'not_ready',
    checks: results,
  };
}

/**
 * A role's own readiness (its public /readyz): only the checks named in `required` are probed,
 * and they alone decide. Nothing it can serve without is asked at all.
 */
export function checkRequired(
  checks: readonly DependencyCheck[],
  timeoutMs: number,
  required: readonly string[],
): Promise<ReadinessReport> {
  return checkReadiness(
    checks.filter((check) => required.includes(check.name)),
    timeoutMs,
  );
}

async function runCheck(check: DependencyCheck, timeoutMs: number): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([check.check(), timeout]);
    return { name: check.name, status: 'up', latency_ms: elapsed(started) };
  } catch (error) {
    return {
      name: check.name,
      status: 'down',
      latency_ms: elapsed(started),
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    clearTimeout(timer);
  }
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}
