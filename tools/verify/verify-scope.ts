/**
 * Which payments a verification judges. Unscoped (no field set) it judges the whole database and
 * also reports rows and events that belong to no payment; scoped it judges only the payments
 * matched, so a load test's run can be checked in a database shared with other work.
 */
export interface VerifyScope {
  /** Payments created at or after this time. */
  since?: Date;
  /** Payments created before this time (a checkpoint of a run that goes on: chaos --ha). */
  until?: Date;
  /** Payments whose Idempotency-Key starts with this (load tests give each run a prefix). */
  keyPrefix?: string;
}

export function isScoped(scope: VerifyScope): boolean {
  return scope.since !== undefined || scope.until !== undefined || scope.keyPrefix !== undefined;
}

/**
 * The scope as an SQL CTE named `scope` over `payments`, with its SCOPE_PARAMETER_COUNT
 * parameters from `$first` on; pass `scopeParameters(scope)` in that position.
 */
export function scopeCte(first = 1): string {
  return `scope AS (
    SELECT p.* FROM payments p
     WHERE ($${first}::timestamptz IS NULL OR p.created_at >= $${first})
       AND ($${first + 1}::text IS NULL OR p.id IN (
             SELECT k.payment_id FROM idempotency_keys k
              WHERE starts_with(k.idempotency_key, $${first + 1}::text)))
       AND ($${first + 2}::timestamptz IS NULL OR p.created_at < $${first + 2})
  )`;
}

/** How many parameters `scopeCte` takes: a query's own come after them. */
export const SCOPE_PARAMETER_COUNT = 3;

export function scopeParameters(scope: VerifyScope): [Date | null, string | null, Date | null] {
  return [scope.since ?? null, scope.keyPrefix ?? null, scope.until ?? null];
}

export function describeScope(scope: VerifyScope): string {
  const parts: string[] = [];
  if (scope.keyPrefix !== undefined) parts.push(`keys starting with "${scope.keyPrefix}"`);
  if (scope.since !== undefined) parts.push(`created since ${scope.since.toISOString()}`);
  if (scope.until !== undefined) parts.push(`created before ${scope.until.toISOString()}`);
  return parts.length === 0 ? 'every payment in the database' : `payments with ${parts.join(', ')}`;
}
