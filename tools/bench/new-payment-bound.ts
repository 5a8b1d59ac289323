/**
 * The bound on new payments/s of an API that does both the SQL's work (pgbench) and the HTTP
 * work (bare Express) on the same machine: their costs per payment add up.
 */
export function newPaymentBound(pgbenchPerSecond: number, bareExpressPerSecond: number): number {
  if (pgbenchPerSecond <= 0 || bareExpressPerSecond <= 0) return 0;
  return 1 / (1 / pgbenchPerSecond + 1 / bareExpressPerSecond);
}
