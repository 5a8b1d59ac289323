import { createKafka } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import type { LeaderTarget, PlannedFault } from './fault-plan.js';
import type { FaultWindow } from './fault-window.js';
import { kafkaConfig } from './run-resources.js';
import type { StackControl } from './stack-control.js';
import { sleep, type Timeline } from './timeline.js';

export interface LeaderKillContext {
  stack: StackControl;
  timeline: Timeline;
  /** Services killed and not yet started again: the cleanup starts them on an abort. */
  stopped: Set<'redis' | 'postgres' | 'kafka' | 'kafka3'>;
  /** The owner's environment of the run (KAFKA_* with TLS and SASL, the run's topic). */
  env: NodeJS.ProcessEnv;
}

/**
 * How long the Postgres primary is dead before the promote step runs: what an operator's or a
 * cloud's failure detection takes at the least. Everything that needs the database waits (503).
 */
export const PROMOTE_AFTER_MS = 3_000;

/** Longest wait for the cluster to name a new leader after a kill; noted, never fatal. */
const NEW_LEADER_WAIT_MS = 60_000;

/**
 * Kills the leader `target` names, notes when a successor took over (a new partition leader, a
 * new quorum leader, Sentinel's promotion, the promote step), holds, and brings the dead node
 * back with `scripts/stack.sh start` (it rejoins as a follower, replica or standby).
 */
export async function killLeader(
  fault: PlannedFault,
  target: LeaderTarget,
  ctx: LeaderKillContext,
): Promise<FaultWindow> {
  const { stack, timeline } = ctx;
  const startMs = timeline.now();
  const service = target.startsWith('kafka')
    ? 'kafka'
    : target === 'redis-primary'
      ? 'redis'
      : 'postgres';
  const victim = await victimOf(target, ctx);
  timeline.note(`SIGKILL ${victim.name} (pid ${victim.pid})`);
  ctx.stopped.add(service);
  stack.kill(victim.pid);
  const killedMs = timeline.now();
  if (target === 'postgres-primary') {
    await sleep(PROMOTE_AFTER_MS);
    await stack.promotePostgres();
    timeline.note(
      `promote step done ${timeline.now() - killedMs} ms after the kill (the standby is the primary behind haproxy)`,
    );
  } else {
    const successor = await waitForSuccessor(target, victim, ctx);
    timeline.note(
      successor === null
        ? `no new leader within ${NEW_LEADER_WAIT_MS / 1000} s of the kill`
        : `${successor} took over ${timeline.now() - killedMs} ms after the kill`,
    );
  }
  await sleep(fault.holdSeconds * 1000 - (timeline.now() - startMs));
  const before = timeline.now();
  await stack.start(service);
  ctx.stopped.delete(service);
  timeline.note(
    `${victim.name} back (scripts/stack.sh start ${service}: ${target === 'postgres-primary' ? 'rebuilt as the standby' : 'a follower again'}) after ${timeline.now() - before} ms`,
  );
  return { fault, startMs, endMs: timeline.now() };
}

interface Victim {
  name: string;
  pid: number;
  /** The Kafka node id, for the partition leader. */
  node?: number;
}

async function victimOf(target: LeaderTarget, ctx: LeaderKillContext): Promise<Victim> {
  const { stack } = ctx;
  switch (target) {
    case 'kafka-partition-leader': {
      const node = await partitionLeader(ctx.env);
      if (node === null) throw new Error('the payments topic has no leader for partition 0');
      const topic = ctx.env.KAFKA_TOPIC_PAYMENTS ?? '?';
      return {
        name: `Kafka node ${node}, leader of ${topic} partition 0`,
        pid: await stack.haPid('kafka-node', String(node)),
        node,
      };
    }
    case 'kafka-controller':
      return { name: 'the active Kafka controller', pid: await stack.haPid('kafka-controller') };
    case 'redis-primary':
      return { name: 'the Redis primary', pid: await stack.haPid('redis-primary') };
    case 'postgres-primary':
      return { name: 'the Postgres primary', pid: await stack.haPid('postgres-primary') };
  }
}

/** Polls until another process leads; its description, or null after NEW_LEADER_WAIT_MS. */
async function waitForSuccessor(
  target: Exclude<LeaderTarget, 'postgres-primary'>,
  victim: Victim,
  ctx: LeaderKillContext,
): Promise<string | null> {
  const deadline = Date.now() + NEW_LEADER_WAIT_MS;
  while (Date.now() < deadline) {
    try {
      if (target === 'kafka-partition-leader') {
        const node = await partitionLeader(ctx.env);
        if (node !== null && node !== victim.node) return `Kafka node ${node} (partition leader)`;
      } else {
        const pid = await ctx.stack.haPid(target);
        if (pid !== victim.pid) {
          return target === 'redis-primary'
            ? `the promoted Redis replica (pid ${pid})`
            : `a new Kafka controller (pid ${pid})`;
        }
      }
    } catch {
      // No leader yet (an election, Sentinel's vote): ask again.
    }
    await sleep(250);
  }
  return null;
}

/** The node id leading partition 0 of the run's payments topic (null: none right now). */
async function partitionLeader(env: NodeJS.ProcessEnv): Promise<number | null> {
  const config = { ...kafkaConfig(env), KAFKA_CLIENT_ID: 'chaos-leader-probe' };
  const kafka = createKafka(config, createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }), {
    retry: { retries: 1, initialRetryTime: 200, maxRetryTime: 1_000 },
    requestTimeout: 5_000,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [config.KAFKA_TOPIC_PAYMENTS] });
    const partition = topics[0]?.partitions.find((p) => p.partitionId === 0);
    return partition === undefined || partition.leader < 0 ? null : partition.leader;
  } finally {
    await admin.disconnect();
  }
}
