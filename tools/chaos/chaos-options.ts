import { parseArgs } from 'node:util';

export interface ChaosOptions {
  /** The faults are spread over this long; the load lasts until the last one was undone. */
  durationSeconds: number;
  /** Processes of each role (api, relay, settlement, webhooks). */
  processes: number;
  /** Use the three-node Kafka (`scripts/stack.sh start kafka3`) and lose one broker. */
  kafka3: boolean;
  /**
   * Run against the HA topology (`STACK_TOPOLOGY=ha scripts/stack.sh start`): the faults are the
   * leader kills (Kafka partition leader, active controller, Redis primary, Postgres primary), each
   * followed by a check of every 202 and a verify of every payment so far.
   */
  ha: boolean;
  /** New payments per second of the mixed load. */
  rate: number;
  /** Storm: virtual users, each firing `copies` copies of one key at once. */
  stormVus: number;
  copies: number;
  /** How long verify may wait for the pipeline to drain. */
  verifyWaitSeconds: number;
  /** Also fail on the client-side invariants and the latency bounds. */
  strict: boolean;
  /** Request deadline checked by --strict during a Postgres freeze. */
  deadlineMs: number;
  /** Keep the run's database and topics even when the run passed. */
  keep: boolean;
}

export const CHAOS_USAGE = `usage: npm run chaos -- [--duration <s>] [--processes <n>] [--kafka3 | --ha] [--rate <n>]
                        [--storm-vus <n>] [--copies <n>] [--verify-wait <s>] [--strict]
                        [--deadline-ms <ms>] [--keep]
  --duration     seconds the faults are spread over (default 180, at least 60); the load runs
                 until 20 s after the last one was undone, longer when restarts are slow
  --processes    processes of each role: api, relay, settlement, webhooks (default 2)
  --kafka3       run against the three-node Kafka (scripts/stack.sh start kafka3); one broker
                 is frozen and one killed instead of the single broker's stop, and the whole
                 cluster is frozen while dead letters are due
  --ha           run against the HA topology (npm run stack:ha: three brokers, Redis with
                 Sentinels, a Postgres standby, TLS and authentication); the faults are SIGKILLs
                 of the leaders: the payments topic's partition leader, the active controller,
                 the Redis primary, the Postgres primary (then promoted); after each, every 202
                 is looked up and verify judges every payment so far
  --rate         new payments per second of the mixed load (default 20)
  --storm-vus    storm virtual users (default 2); each fires --copies copies of a key at once,
                 spread over the API processes (default 6)
  --verify-wait  seconds verify may wait for the pipeline to drain (default 240)
  --strict       also fail when a client-side invariant broke (storm, mix checks) or a fault
                 window misses the latency bounds of issue #10 (Redis freeze p99 <= 1 s and
                 max <= 2.5 s, Postgres freeze max <= --deadline-ms, Kafka freeze p99 <= 1 s)
  --deadline-ms  request deadline for --strict (default 5000)
  --keep         keep the run's database and topics even when it passed
Services: those of scripts/stack.sh (its STACK_DIR and *_PORT_STACK variables pick the stack;
HA_PORT_OFFSET the HA topology's ports).
Exit status: 0 verify found nothing (and, with --strict, the bounds held), 1 it did not,
2 the run could not be carried out.`;

export class ChaosUsageError extends Error {}

export function parseChaosOptions(argv: readonly string[]): ChaosOptions | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      duration: { type: 'string', default: '180' },
      processes: { type: 'string', default: '2' },
      kafka3: { type: 'boolean', default: false },
      ha: { type: 'boolean', default: false },
      rate: { type: 'string', default: '20' },
      'storm-vus': { type: 'string', default: '2' },
      copies: { type: 'string', default: '6' },
      'verify-wait': { type: 'string', default: '240' },
      strict: { type: 'boolean', default: false },
      'deadline-ms': { type: 'string', default: '5000' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  if (values.kafka3 && values.ha) {
    throw new ChaosUsageError(
      '--kafka3 and --ha exclude each other (the HA topology has three brokers)',
    );
  }
  return {
    durationSeconds: integer('--duration', values.duration, 60, 3_600),
    processes: integer('--processes', values.processes, 1, 8),
    kafka3: values.kafka3,
    ha: values.ha,
    rate: integer('--rate', values.rate, 1, 10_000),
    stormVus: integer('--storm-vus', values['storm-vus'], 1, 200),
    copies: integer('--copies', values.copies, 1, 50),
    verifyWaitSeconds: integer('--verify-wait', values['verify-wait'], 0, 3_600),
    strict: values.strict,
    deadlineMs: integer('--deadline-ms', values['deadline-ms'], 100, 600_000),
    keep: values.keep,
  };
}

function integer(option: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new ChaosUsageError(`${option} must be an integer from ${min} to ${max}`);
  }
  return n;
}

/** The options of a run as its report states them. */
export function describeChaosOptions(options: ChaosOptions, apis: number, brokers: string): string {
  return [
    `settings: --duration ${options.durationSeconds} --processes ${options.processes}`,
    `--rate ${options.rate} --storm-vus ${options.stormVus} --copies ${options.copies}`,
    `${options.kafka3 ? '--kafka3 ' : ''}${options.ha ? '--ha ' : ''}${options.strict ? '--strict ' : ''}(${apis} APIs; Kafka ${brokers})`,
  ].join(' ');
}

/** A wrong command line: ours (ChaosUsageError) or node's parseArgs's. */
export function isChaosUsageError(error: unknown): error is Error {
  return (
    error instanceof ChaosUsageError ||
    (error instanceof Error &&
      String((error as Error & { code?: unknown }).code).startsWith('ERR_PARSE_ARGS'))
  );
}
