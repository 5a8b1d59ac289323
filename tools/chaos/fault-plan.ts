import type { Role } from './role-fleet.js';

/** The leaders the HA run kills (issue 39), each with SIGKILL: no clean shutdown, no handover. */
export type LeaderTarget =
  'kafka-partition-leader' | 'kafka-controller' | 'redis-primary' | 'postgres-primary';

export type FaultAction =
  | { kind: 'kill-role'; role: Role }
  | { kind: 'freeze'; service: 'redis' | 'postgres' | 'kafka' }
  | { kind: 'stop'; service: 'redis' | 'postgres' | 'kafka' }
  | { kind: 'freeze-broker'; node: number }
  | { kind: 'kill-broker'; node: number }
  /** SIGSTOP one process of a role for longer than its lease, then SIGCONT (not restarted). */
  | { kind: 'pause-role'; role: Role }
  /**
   * Charges and refunds set to exhaust their attempts, then all of Kafka frozen (every broker)
   * until they did: their dead letters wait in the database and go out once after the thaw.
   */
  | { kind: 'freeze-dead-letters' }
  /** Every process of every role replaced one at a time, as a deploy does (rolling-restart.ts). */
  | { kind: 'rolling-restart' }
  /** The acquirer refuses connections (`down`) or drops every answer after charging (`drop`). */
  | { kind: 'acquirer-fault'; mode: 'down' | 'drop' }
  /** The HA topology: a leader SIGKILLed, its successor noted, the node back later (leader-kill.ts). */
  | { kind: 'kill-leader'; target: LeaderTarget };

export interface PlannedFault {
  label: string;
  action: FaultAction;
  /** Planned start, seconds after the load started (later if the previous fault ran long). */
  atSeconds: number;
  /** How long the fault lasts before the thaw or restart. */
  holdSeconds: number;
}

/** Load before the first fault: the baseline the fault windows are compared with. */
export const WARMUP_SECONDS = 10;
/**
 * Load after the last fault was undone, so the clients' retries of that fault finish inside the
 * run; the plan keeps this much of --duration free, and the load runs on for it in any case.
 */
export const TAIL_SECONDS = 20;

/**
 * Longest hold of each fault, in the terms: a process crash, a dependency that stops
 * answering (SIGSTOP: its sockets stay open), a dependency that is down. Shortened to half a
 * slot when --duration leaves less room.
 */
const HOLDS: Record<FaultAction['kind'], number> = {
  'kill-role': 3,
  freeze: 10,
  stop: 6,
  'freeze-broker': 12,
  'kill-broker': 10,
  // Fixed by the relays' lease (planFaults' relayPauseSeconds), whatever the slot.
  'pause-role': 0,
  // At least this long, and on until the dead letters it set up are due (dead-letter-fault.ts).
  'freeze-dead-letters': 6,
  // As long as the processes take to stop and start, one after another.
  'rolling-restart': 0,
  // Issue 36's lengths, whatever the slot (ACQUIRER_FAULT_SECONDS).
  'acquirer-fault': 0,
  // Long enough for the successor to take over and the clients to feel it, then the node returns.
  'kill-leader': 15,
};

/** How long each acquirer phase lasts: issue 36 asks for a minute down and 20 s of lost answers. */
export const ACQUIRER_FAULT_SECONDS = { down: 60, drop: 20 } as const;

/**
 * The faults of a run, in order: every role killed and restarted first, the acquirer too (leases then
 * expire while the load still runs), the acquirer down for a minute and then dropping its answers for 20 s (issue 36), every process replaced one at a time (a deploy's rolling
 * restart: SIGTERM, wait for the replacement's ready), relay-1 paused past its lease (`relayPauseSeconds`), then
 * each dependency frozen and thawed (Kafka while dead letters are due), then each stopped and
 * started (the slowest to restart first, so its recovery still happens under load). With the
 * three-node Kafka, its freeze and kill hit broker 2 only (the cluster must carry on with the
 * other two) and the dead-letter freeze stops all three.
 */
export function planFaults(
  durationSeconds: number,
  kafka3: boolean,
  relayPauseSeconds: number,
): PlannedFault[] {
  const actions: { label: string; action: FaultAction }[] = [
    { label: 'SIGKILL api-1, restart', action: { kind: 'kill-role', role: 'api' } },
    { label: 'SIGKILL relay-1, restart', action: { kind: 'kill-role', role: 'relay' } },
    { label: 'SIGKILL settlement-1, restart', action: { kind: 'kill-role', role: 'settlement' } },
    { label: 'SIGKILL webhooks-1, restart', action: { kind: 'kill-role', role: 'webhooks' } },
    // Charges in flight lose their answer (settlement retries them with the same key) and the
    // calls while it is down are refused: verify still finds one charge per payment.
    { label: 'SIGKILL acquirer-1, restart', action: { kind: 'kill-role', role: 'acquirer' } },
    // An acquirer deploy or outage of a minute, then lost answers: waiting, never a dead letter.
    {
      label: 'acquirer down 60 s',
      action: { kind: 'acquirer-fault', mode: 'down' },
    },
    {
      label: 'acquirer drops answers 20 s',
      action: { kind: 'acquirer-fault', mode: 'drop' },
    },
    { label: 'rolling restart of every process', action: { kind: 'rolling-restart' } },
    { label: 'SIGSTOP relay-1 past its lease', action: { kind: 'pause-role', role: 'relay' } },
    { label: 'freeze Redis', action: { kind: 'freeze', service: 'redis' } },
    { label: 'freeze Postgres', action: { kind: 'freeze', service: 'postgres' } },
    // The single broker's plain freeze is the dead-letter one: POST is held to the same bound.
    ...(kafka3
      ? [
          {
            label: 'freeze Kafka broker 2 of 3',
            action: { kind: 'freeze-broker', node: 2 } as const,
          },
        ]
      : []),
    {
      label: 'freeze Kafka while dead letters are due',
      action: { kind: 'freeze-dead-letters' },
    },
    // Kafka's JVM takes longest to come back, so it goes first and Redis, the quickest, last.
    kafka3
      ? { label: 'SIGKILL Kafka broker 2 of 3, restart', action: { kind: 'kill-broker', node: 2 } }
      : { label: 'stop Kafka, start', action: { kind: 'stop', service: 'kafka' } },
    { label: 'stop Postgres, start', action: { kind: 'stop', service: 'postgres' } },
    { label: 'stop Redis, start', action: { kind: 'stop', service: 'redis' } },
  ];
  const slot = (durationSeconds - WARMUP_SECONDS - TAIL_SECONDS) / actions.length;
  return actions.map(({ label, action }, i) => ({
    label,
    action,
    atSeconds: Math.round(WARMUP_SECONDS + i * slot),
    holdSeconds:
      action.kind === 'pause-role'
        ? relayPauseSeconds
        : action.kind === 'acquirer-fault'
          ? ACQUIRER_FAULT_SECONDS[action.mode]
          : Math.min(HOLDS[action.kind], Math.max(2, Math.floor(slot / 2))),
  }));
}

/**
 * The HA run's faults (issue 39), in order: the payments topic's partition leader, the active
 * Kafka controller, the Redis primary (Sentinel promotes the replica) and the Postgres primary
 * (the promote step runs PROMOTE_AFTER_MS later). Each node comes back as a follower before the
 * next fault, and the run checks every 202 and verifies every payment after each.
 */
export function planHaFaults(durationSeconds: number): PlannedFault[] {
  const targets: { label: string; target: LeaderTarget }[] = [
    { label: 'SIGKILL Kafka partition leader', target: 'kafka-partition-leader' },
    { label: 'SIGKILL active Kafka controller', target: 'kafka-controller' },
    { label: 'SIGKILL Redis primary', target: 'redis-primary' },
    { label: 'SIGKILL Postgres primary, promote', target: 'postgres-primary' },
  ];
  const slot = (durationSeconds - WARMUP_SECONDS - TAIL_SECONDS) / targets.length;
  return targets.map(({ label, target }, i) => ({
    label,
    action: { kind: 'kill-leader', target },
    atSeconds: Math.round(WARMUP_SECONDS + i * slot),
    holdSeconds: Math.min(HOLDS['kill-leader'], Math.max(5, Math.floor(slot / 2))),
  }));
}

/**
 * The latency objective issue #10 sets for a fault's window, checked by --strict: Redis frozen
 * costs at most 1 s at p99 (2.5 s max); Postgres frozen answers within the request deadline;
 * a frozen Kafka does not touch POST at all (p99 within 1 s).
 */
export function latencyBound(
  action: FaultAction,
  deadlineMs: number,
): { p99Ms?: number; maxMs?: number } | null {
  if (action.kind === 'freeze' && action.service === 'redis') return { p99Ms: 1_000, maxMs: 2_500 };
  if (action.kind === 'freeze' && action.service === 'postgres') return { maxMs: deadlineMs };
  if (action.kind === 'freeze' && action.service === 'kafka') return { p99Ms: 1_000 };
  if (action.kind === 'freeze-dead-letters') return { p99Ms: 1_000 };
  if (action.kind === 'freeze-broker') return { p99Ms: 1_000 };
  return null;
}
