import { readFileSync } from 'node:fs';
import { createAcquirerBreaker } from '../../acquirer/acquirer-breaker.js';
import { createAcquirerSimulator } from '../../acquirer/acquirer-simulator.js';
import { createHoldSimulator } from '../../acquirer/hold-simulator.js';
import type { Acquirer, RefundAcquirer } from '../../acquirer/acquirer.js';
import type { HoldAcquirer } from '../../acquirer/hold-acquirer.js';
import { createHoldWorker } from '../../settlement/hold-worker.js';
import { createHttpAcquirer } from '../../acquirer/http-acquirer.js';
import { createRefundSimulator } from '../../acquirer/refund-simulator.js';
import { connectInBackground } from '../../platform/lifecycle/connect-in-background.js';
import {
  consumeBatches,
  createConsumer,
  guardTopicReplication,
} from '../../platform/kafka/kafka.js';
import { ensureSettlementTopics } from '../../settlement/settlement-topics.js';
import type { Platform } from '../../platform/lifecycle/platform.js';
import { createOutageLog } from '../../platform/resilience/outage-log.js';
import { createRefundWorker, type RefundWorkerDeps } from '../../refunds/refund-worker.js';
import { createRelayKafka } from '../../outbox/relay-kafka.js';
import { fullJitterDelay } from '../../platform/resilience/backoff.js';
import { createDeadLetterProducer } from '../../jobs/dead-letters/dead-letter-producer.js';
import {
  createDeadLetterPublisher,
  type SendDeadLetters,
} from '../../jobs/dead-letters/dead-letter-publisher.js';
import { registerJobProbes } from '../../jobs/job-metrics.js';
import { settlementSweeps, startRetentionReaper } from '../../jobs/retention-reaper.js';
import { createSettlementHandler } from '../../settlement/settlement-handler.js';
import { reviveRefundJobs } from '../../refunds/refund-revival.js';
import { reviveHoldJobs } from '../../settlement/hold-job-store.js';
import { createSettlementWorker, type WorkerDeps } from '../../settlement/settlement-worker.js';
import { refuseStart } from '../refuse-start.js';
import type { RunningRole } from '../running-role.js';

export interface SettlementOptions {
  /** Defaults to the acquirer at ACQUIRER_URL, else the in-process simulator (BRIEF section 6). */
  acquirer?: Acquirer;
  /** Test-only fault injection, see WorkerDeps. */
  afterCharge?: WorkerDeps['afterCharge'];
  /** Test-only fault injection: runs before each dead-letter send; a rejection fails it. */
  beforeDeadLetter?: () => Promise<void>;
  /** Refunds go to the acquirer at ACQUIRER_URL, else the simulator's refunds, unless given. */
  refundAcquirer?: RefundAcquirer;
  /** Test-only fault injection, see RefundWorkerDeps. */
  afterRefund?: RefundWorkerDeps['afterRefund'];
  /** Test-only: the newest event data major it reads (a settlement upgraded for a newer one). */
  readableDataMajor?: number;
  /**
   * Authorizes, captures and voids manual payments (issue 40). Unless given: the acquirer above
   * (ACQUIRER_URL's client, else the simulator) when it implements HoldAcquirer.
   */
  holdAcquirer?: HoldAcquirer;
}

/** The acquirer's two-step operations, if this acquirer has them (HoldAcquirer). */
function holdsOf(acquirer: object): HoldAcquirer | undefined {
  const candidate = acquirer as Partial<HoldAcquirer>;
  return typeof candidate.authorize === 'function' &&
    typeof candidate.capture === 'function' &&
    typeof candidate.void === 'function'
    ? (acquirer as HoldAcquirer)
    : undefined;
}

/**
 * The settlement role: a consumer group on the payments topic that records `payment.created`
 * as durable jobs, and a worker that settles them through the acquirer. Kafka down at boot
 * delays readiness ("settlement ready"); it never stops the process.
 */
export function startSettlement(
  platform: Platform,
  options: SettlementOptions = {},
): Promise<RunningRole> {
  const { config, pool, kafka } = platform;
  const logger = platform.logger.child({ role: 'settlement' });
  // Dead letters go out through a bounded, transactional producer of their own (the relay's
  // patience: a send fails within seconds when the broker is down or frozen, and the producer is
  // replaced after a failure, fencing the failed transaction); until the topic takes them they
  // wait in the database (DESIGN record 49).
  const deadLetterProducer = createDeadLetterProducer(
    createRelayKafka(config, logger),
    config.KAFKA_CLIENT_ID,
  );
  const sendDeadLetters: SendDeadLetters = async (batches, sendOptions) => {
    await options.beforeDeadLetter?.();
    await deadLetterProducer.send(batches, sendOptions);
  };
  const deadLetters = createDeadLetterPublisher({
    pool,
    send: sendDeadLetters,
    logger,
    retryDelayMs: (failures) =>
      fullJitterDelay(
        failures,
        config.SETTLEMENT_BACKOFF_BASE_MS,
        config.SETTLEMENT_BACKOFF_CAP_MS,
      ),
    pollMs: Math.max(config.SETTLEMENT_POLL_MS, 1_000),
    retentionSeconds: config.DEAD_LETTER_RETENTION_SECONDS,
  });
  // ACQUIRER_URL set: the acquirer is another process (the `acquirer` role, with its own books
  // and login), each call bounded by ACQUIRER_TIMEOUT_MS; unset: the simulator runs in here.
  // Its bearer token and, for https://, a private CA (DESIGN 121).
  const remote =
    config.ACQUIRER_URL === undefined
      ? undefined
      : createHttpAcquirer(config.ACQUIRER_URL, {
          token: config.ACQUIRER_TOKEN,
          ca:
            config.ACQUIRER_CA_FILE === undefined
              ? undefined
              : readFileSync(config.ACQUIRER_CA_FILE, 'utf8'),
        });
  const simulator = {
    latencyMs: config.ACQUIRER_SIM_LATENCY_MS,
    transientFailureRate: config.ACQUIRER_SIM_FAILURE_RATE,
    timeoutTokenDelayMs: config.ACQUIRER_TIMEOUT_MS * 3,
  };
  const acquirer = options.acquirer ?? remote ?? createAcquirerSimulator(pool, simulator);
  // One log of Postgres outages for both workers: an outage costs one set of lines.
  const postgresOutage = createOutageLog('postgres', logger, config.OUTAGE_LOG_INTERVAL_MS);
  // An acquirer across the network gets a circuit breaker, one per process, shared by both
  // workers (DESIGN 107): while it is open neither claims, and the backlog waits in Postgres.
  const gate =
    options.acquirer === undefined && remote !== undefined
      ? createAcquirerBreaker({
          failureThreshold: config.ACQUIRER_BREAKER_FAILURES,
          openMs: config.ACQUIRER_BREAKER_OPEN_MS,
          logger,
          outageLogIntervalMs: config.OUTAGE_LOG_INTERVAL_MS,
        })
      : undefined;
  // Holds (authorize/capture/void, issue 40): ACQUIRER_URL's client has them; without it the
  // hold simulator runs in here beside the charge simulator. A test's charge-only acquirer has
  // none: its manual payments are dead-lettered (hold_acquirer_missing).
  const holdAcquirer =
    options.holdAcquirer ??
    holdsOf(acquirer) ??
    (options.acquirer === undefined ? createHoldSimulator(pool, simulator) : undefined);
  const worker = createSettlementWorker({
    pool,
    postgresOutage,
    acquirer,
    ...(holdAcquirer ? { holdAcquirer } : {}),
    deadLetters: { topic: config.KAFKA_TOPIC_DLQ, wake: deadLetters.wake },
    logger,
    config,
    ...(gate ? { gate } : {}),
    ...(options.afterCharge ? { afterCharge: options.afterCharge } : {}),
  });
  // Refund jobs are written by the API with each refund; this worker beside the charges' one
  // works them with their own REFUND_* policy and the same dead-letter topic (DESIGN, Part VI).
  const refundWorker = createRefundWorker({
    pool,
    postgresOutage,
    acquirer: options.refundAcquirer ?? remote ?? createRefundSimulator(pool),
    deadLetters: { topic: config.KAFKA_TOPIC_DLQ, wake: deadLetters.wake },
    logger,
    config,
    ...(gate && options.refundAcquirer === undefined ? { gate } : {}),
    ...(options.afterRefund ? { afterRefund: options.afterRefund } : {}),
  });
  // Captures, voids and expiries of manual payments: one hold job per authorization.
  const holdWorker = createHoldWorker({
    pool,
    postgresOutage,
    holdAcquirer,
    deadLetters: { topic: config.KAFKA_TOPIC_DLQ, wake: deadLetters.wake },
    logger,
    config,
    ...(gate && options.holdAcquirer === undefined ? { gate } : {}),
  });
  const handle = createSettlementHandler({
    pool,
    worker,
    logger,
    reviveRefunds: (revivals) => reviveRefundJobs(pool, revivals),
    reviveHolds: (revivals) => reviveHoldJobs(pool, revivals),
    ...(options.readableDataMajor === undefined
      ? {}
      : { readableDataMajor: options.readableDataMajor }),
  });
  const unregisterJobProbes = registerJobProbes(pool, ['settlement', 'refund', 'hold']);
  // Processed event ids, resolved dead jobs, merchants' events past retention (DESIGN 110, 129).
  const reaper = startRetentionReaper(
    pool,
    logger,
    settlementSweeps({
      processedEventSeconds: config.PROCESSED_EVENT_RETENTION_SECONDS,
      deadJobSeconds: config.DEAD_JOB_RETENTION_SECONDS,
      merchantEventSeconds: config.EVENT_RETENTION_DAYS * 86_400,
    }),
    { batch: config.RETENTION_REAPER_BATCH, intervalMs: config.RETENTION_REAPER_INTERVAL_MS },
  );
  const consumer = createConsumer(kafka, config.KAFKA_CONSUMER_GROUP);
  // The worker needs the database and, for dead letters, the producer; not the consumer
  // group. It starts as soon as those are up, so jobs left by a crashed process are resumed
  // even while the group is still waiting out the dead member's session.
  const producing = connectInBackground(
    'settlement producer',
    async () => {
      await platform.admin.connect();
      await ensureSettlementTopics(platform.admin, config);
      // Production refuses a topic with fewer than 3 replicas or min ISR 2 (DESIGN 122).
      await guardTopicReplication(
        platform.admin,
        config,
        [config.KAFKA_TOPIC_PAYMENTS, config.KAFKA_TOPIC_DLQ],
        logger,
        refuseStart(logger),
      );
      await deadLetterProducer.connected();
    },
    logger,
    () => {
      worker.start();
      refundWorker.start();
      holdWorker.start();
      deadLetters.start();
    },
  );
  const consuming = connectInBackground(
    'settlement consumer',
    async () => {
      if (!(await producing.connected)) return;
      await consumer.connect();
      await consumeBatches(
        consumer,
        [config.KAFKA_TOPIC_PAYMENTS],
        async (batch) => {
          await handle(batch);
        },
        {
          partitionsConsumedConcurrently: config.SETTLEMENT_CONSUMER_PARTITIONS,
          maxRecords: config.SETTLEMENT_INTAKE_BATCH_MAX,
        },
      );
    },
    logger,
    () => {
      logger.info('settlement ready');
    },
  );
  return Promise.resolve({
    name: 'settlement',
    close: async () => {
      unregisterJobProbes();
      await reaper.stop();
      producing.stop();
      consuming.stop();
      // Stop intake first (in-flight records finish and commit), then the worker's jobs.
      if (await consuming.connected) await consumer.disconnect();
      if (await producing.connected) {
        await Promise.all([worker.stop(), refundWorker.stop(), holdWorker.stop()]);
        // The send in flight is bounded; unsent letters stay in the database for the next start.
        await deadLetters.stop();
        await deadLetterProducer.close();
      }
    },
  });
}
