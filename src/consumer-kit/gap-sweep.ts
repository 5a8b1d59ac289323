import type { Admin, Kafka } from 'kafkajs';
import type { Pool } from 'pg';
import type { ApplyOptions } from './apply-event.js';
import { checkOrder, type SubjectState } from './lifecycle-order.js';
import type { GapHandler, GapReason } from './order-gap.js';
import { resolveGap, type GapResult } from './resolve-gap.js';
import type { CloudEvent } from './parse-cloud-event.js';
import { withTimeout } from './with-timeout.js';

export interface GapSweepOptions {
  apply: ApplyOptions;
  onGap: GapHandler | undefined;
  /** How long a parked event waits for its predecessor before the gap is reported. */
  gapAfterMs: number;
  /** Kafka partitions whose earliest retained records this kit read past, to report at once. */
  retention: RetentionCheck;
  /** Parked events looked at per sweep, oldest first. */
  batch?: number;
}

interface Candidate {
  event_id: string;
  subject: string;
  event: CloudEvent;
  topic: string | null;
  kafka_partition: number | null;
  overdue: boolean;
  waiting: boolean;
  state: SubjectState | null;
}

/**
 * One pass over the parked events: each one that is due gets its gap decided (resolveGap, one
 * transaction each). Due: parked (or last told to wait) for `gapAfterMs`; or late (its payment
 * is past it: waiting cannot help); or early on a partition the retention check clears. Returns
 * what was decided; a failing decision is thrown after the others were tried (the next sweep
 * asks again).
 */
export async function sweepGaps(options: GapSweepOptions): Promise<GapResult[]> {
  const { apply } = options;
  const { rows } = await apply.pool.query<Candidate>({
    text: `SELECT i.event_id, i.subject, i.event, i.topic, i.kafka_partition,
                  coalesce(i.gap_reported_at, i.received_at)
                    < now() - make_interval(secs => $1::float8 / 1000) AS overdue,
                  i.gap_reported_at IS NOT NULL AS waiting, s.state
           FROM ${apply.tables.inbox} i LEFT JOIN ${apply.tables.subjects} s USING (subject)
           WHERE i.status = 'parked' ORDER BY i.received_at, i.kafka_offset LIMIT $2`,
    values: [options.gapAfterMs, options.batch ?? 100],
    query_timeout: apply.timeoutMs,
  } as { text: string; values: unknown[] }); // query_timeout: per query, typed on the config only
  const due: { row: Candidate; reason: GapReason | null }[] = [];
  for (const row of rows) {
    if (row.overdue) due.push({ row, reason: 'waited' });
    else if (row.waiting) continue;
    else if (isLate(row)) due.push({ row, reason: null });
    else if (await options.retention.cleared(row.topic, row.kafka_partition)) {
      due.push({ row, reason: 'before_retention' });
    }
  }
  const results: GapResult[] = [];
  let failure: Error | undefined;
  for (const { row, reason } of due) {
    try {
      const handling = { ...apply, onGap: options.onGap };
      results.push(await resolveGap(handling, row.subject, row.event_id, reason));
    } catch (error) {
      failure ??= error instanceof Error ? error : new Error(String(error));
    }
  }
  if (failure !== undefined) throw failure;
  return results;
}

function isLate(row: Candidate): boolean {
  const verdict = checkOrder(row.state ?? {}, row.event);
  return !verdict.inOrder && verdict.missing === null;
}

export interface RetentionCheck {
  /**
   * True when the predecessor of an early event parked from this partition cannot come any
   * more: this kit handled every record up to the partition's end (caught up), and its inbox
   * holds a record at or before the partition's earliest retained offset (so it read every
   * retained record before the event, without the predecessor among them). A consumer that
   * started at the latest offset, or whose first record there was no event, never clears:
   * its parked events wait `gapAfterMs`.
   */
  cleared(topic: string | null, partition: number | null): Promise<boolean>;
  /** The record at `offset` of `topic`/`partition` was handled (applied, parked, skipped...). */
  handled(topic: string, partition: number, offset: string): void;
  /** Forgets the watermarks read (each sweep reads them afresh). */
  reset(): void;
  close(): Promise<void>;
}

export function createRetentionCheck(options: {
  kafka: Kafka;
  pool: Pool;
  inbox: string;
  timeoutMs: number;
  kafkaTimeoutMs: number;
}): RetentionCheck {
  const lastHandled = new Map<string, bigint>();
  let offsets = new Map<string, Promise<Map<number, { low: bigint; high: bigint }>>>();
  let admin: Admin | undefined;

  const watermarks = (topic: string) => {
    let read = offsets.get(topic);
    if (read === undefined) {
      read = (async () => {
        if (admin === undefined) {
          const connecting = options.kafka.admin();
          await withTimeout(connecting.connect(), options.kafkaTimeoutMs, 'connecting the admin');
          admin = connecting;
        }
        const fetched = await withTimeout(
          admin.fetchTopicOffsets(topic),
          options.kafkaTimeoutMs,
          `reading the offsets of ${topic}`,
        );
        return new Map(
          fetched.map((p) => [p.partition, { low: BigInt(p.low), high: BigInt(p.high) }]),
        );
      })();
      offsets.set(topic, read);
    }
    return read;
  };

  return {
    async cleared(topic, partition) {
      if (topic === null || partition === null) return false;
      const last = lastHandled.get(`${topic}:${partition}`);
      if (last === undefined) return false;
      const marks = (await watermarks(topic)).get(partition);
      if (marks === undefined || last + 1n < marks.high) return false;
      const { rows } = await options.pool.query<{ first: string | null }>({
        text: `SELECT min(kafka_offset)::text AS first FROM ${options.inbox}
               WHERE topic = $1 AND kafka_partition = $2`,
        values: [topic, partition],
        query_timeout: options.timeoutMs,
      } as { text: string; values: unknown[] }); // query_timeout: as in sweepGaps
      const first = rows[0]?.first;
      return first !== null && first !== undefined && BigInt(first) <= marks.low;
    },
    handled(topic, partition, offset) {
      const key = `${topic}:${partition}`;
      const value = BigInt(offset);
      if ((lastHandled.get(key) ?? -1n) < value) lastHandled.set(key, value);
    },
    reset() {
      offsets = new Map();
    },
    async close() {
      const open = admin;
      admin = undefined;
      if (open) {
        await withTimeout(open.disconnect(), options.kafkaTimeoutMs, 'disconnecting the admin');
      }
    },
  };
}
