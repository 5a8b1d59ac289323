import type pg from 'pg';
import type { PlannedFault } from './fault-plan.js';
import type { FaultWindow } from './fault-window.js';
import { sleep, type Timeline } from './timeline.js';

/** The acquirer's faults chaos sets (src/acquirer/acquirer-faults.ts): refused, answer lost. */
export type AcquirerFaultMode = 'down' | 'drop';

/** How long after the acquirer's return its waiting payments may take before chaos says so. */
const RECOVERY_BOUND_MS = 120_000;

/**
 * The payments whose outcome the acquirer decides and that are waiting on it: processing, with
 * a source the simulator answers at once (the failure tokens that never answer, or answer a
 * retryable error every time, wait for their own reasons).
 */
const WAITING = `
  SELECT count(*)::int AS n FROM payments
   WHERE status = 'processing'
     AND (source IN ('tok_visa', 'tok_decline') OR source LIKE 'tok\\_transient\\_%')`;

/** The payments waiting on the acquirer now (the ids: recovery is judged on exactly these). */
async function waitingIds(db: pg.Pool): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(WAITING.replace('count(*)::int AS n', 'id'));
  return rows.map((row) => row.id);
}

/** How many of `ids` are still processing. */
async function stillWaiting(db: pg.Pool, ids: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM payments WHERE id = ANY($1::uuid[]) AND status = 'processing'",
    [ids],
  );
  return rows[0]?.n ?? 0;
}

async function setFault(adminUrl: string, body: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${adminUrl}/acquirer/fault`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
  if (!response.ok) throw new Error(`PUT /acquirer/fault answered ${response.status}`);
}

/**
 * Issue 36's acquirer phases: the acquirer refuses every connection (`down`) or charges and
 * then drops every answer (`drop`) for the fault's hold, under the run's load. Settlement must
 * wait (not sent: no attempt; unknown: an inquiry before any new charge), so verify afterwards
 * finds no `acquirer_unavailable` dead letter and one charge per payment. The window ends when
 * the acquirer answers again; the timeline notes the recovery: how long the payments waiting on
 * it at that moment took to settle or fail.
 */
export async function acquirerFault(
  fault: PlannedFault,
  mode: AcquirerFaultMode,
  ctx: { adminUrl: string; db: pg.Pool; timeline: Timeline },
): Promise<FaultWindow> {
  const { timeline } = ctx;
  const holdMs = fault.holdSeconds * 1000;
  const startMs = timeline.now();
  // The fault clears itself a little after the hold, should this run die before undoing it.
  await setFault(ctx.adminUrl, { mode, duration_ms: holdMs + 30_000 });
  timeline.note(
    mode === 'down'
      ? `acquirer down (refuses connections) for ${fault.holdSeconds} s`
      : `acquirer charges, then drops every answer, for ${fault.holdSeconds} s`,
  );
  try {
    await sleep(holdMs);
  } finally {
    await setFault(ctx.adminUrl, { mode: 'none' });
  }
  const endMs = timeline.now();
  const ids = await waitingIds(ctx.db).catch(() => []);
  timeline.note(`acquirer answering again; ${ids.length} payments waiting on it`);
  let left = ids.length;
  while (left > 0 && timeline.now() - endMs < RECOVERY_BOUND_MS) {
    await sleep(250);
    left = await stillWaiting(ctx.db, ids).catch(() => left);
  }
  timeline.note(
    left === 0
      ? `recovery: the ${ids.length} payments waiting on the acquirer all settled or failed ${timeline.now() - endMs} ms after its return`
      : `recovery: ${left} of ${ids.length} payments still processing ${RECOVERY_BOUND_MS / 1000} s after the acquirer's return`,
  );
  return { fault, startMs, endMs };
}
