import type pg from 'pg';

/** Waits until no payment is pending or processing; resolves with how many still are. */
export async function drainPayments(pool: pg.Pool, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM payments WHERE status IN ('pending', 'processing')`,
    );
    const left = rows[0]?.n ?? 0;
    if (left === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
