import type pg from 'pg';
import type { RoleFleet } from './role-fleet.js';
import { sleep } from './timeline.js';

/** How long chaos tries to catch the relay holding a claim before it pauses it as it is. */
const CATCH_BUDGET_MS = 8_000;
/** Two reads of the leases this far apart: a lease seen in both is the paused relay's. */
const SETTLE_MS = 300;

export interface PausedRelay {
  pid: number;
  /** Outbox rows the paused relay had claimed and not marked published (ids). */
  heldRows: string[];
  /** SIGSTOPs it took (each one that caught no claim was followed by a SIGCONT). */
  tries: number;
}

/**
 * SIGSTOPs `name`, preferably while it holds a claim: a relay holds its rows only for the few
 * milliseconds of a round, so chaos stops it, looks for outbox rows leased under the same owner
 * token before and 300 ms after (a live relay finishes a round well within that; the stopped
 * one cannot), and if there are none resumes it and tries again a moment later, for at most
 * CATCH_BUDGET_MS. The process is left stopped either way.
 */
export async function pauseHoldingClaim(
  fleet: RoleFleet,
  name: string,
  db: pg.Pool,
): Promise<PausedRelay> {
  const deadline = Date.now() + CATCH_BUDGET_MS;
  for (let tries = 1; ; tries++) {
    const pid = fleet.pause(name);
    const held = await heldRows(db).catch(() => []);
    if (held.length > 0 || Date.now() >= deadline) return { pid, heldRows: held, tries };
    fleet.resume(name);
    await sleep(50 + Math.random() * 150);
  }
}

async function heldRows(db: pg.Pool): Promise<string[]> {
  const leased = async () => {
    const { rows } = await db.query<{ id: string; lease_owner: string }>(
      `SELECT id::text, lease_owner::text FROM outbox
        WHERE published_at IS NULL AND locked_until > now() AND lease_owner IS NOT NULL`,
    );
    return rows;
  };
  const before = new Set((await leased()).map((row) => `${row.id}/${row.lease_owner}`));
  await sleep(SETTLE_MS);
  return (await leased())
    .filter((row) => before.has(`${row.id}/${row.lease_owner}`))
    .map((row) => row.id);
}

/** Of `ids`, how many are published now (rows deleted by retention count as published). */
export async function publishedSince(db: pg.Pool, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const { rows } = await db.query<{ pending: number }>(
    `SELECT count(*)::int AS pending FROM outbox
      WHERE id = ANY($1::bigint[]) AND published_at IS NULL`,
    [ids],
  );
  return ids.length - (rows[0]?.pending ?? 0);
}
