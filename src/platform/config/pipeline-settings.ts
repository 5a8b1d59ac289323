import { z } from 'zod';
import { integer, urlWithProtocol } from './config-fields.js';

/** Kafka requests, settlement, refunds, the acquirer, probes and the outbox relay (part of configSchema). */
export const pipelineSettings = {
  /** Bounds a frozen broker: each Kafka request fails after this long and is retried/backed off. */
  KAFKA_REQUEST_TIMEOUT_MS: integer(100, 600_000)
    .default(10_000)
    .describe('Longest one Kafka request waits for its answer (relay, settlement, admin).'),
  /**
   * A guard, not the budget (DESIGN 106): the retry window is. Bounds the calls of a job whose
   * outcomes keep being lost (a completion that fails after every charge); calls that never
   * reached the acquirer are not counted.
   */
  SETTLEMENT_MAX_ATTEMPTS: integer(1, 100_000)
    .default(1_000)
    .describe(
      'Most acquirer attempts per payment (calls not sent are not attempts) before its event is dead-lettered, whatever the retry window.',
    ),
  /** First retry after up to this long (full jitter); doubles per attempt up to the cap. */
  SETTLEMENT_BACKOFF_BASE_MS: integer(1, 600_000)
    .default(200)
    .describe('Base of the settlement retry backoff (full jitter, doubling per attempt).'),
  /** Minutes, not hours: a recovered acquirer is used within this long (breaker aside). */
  SETTLEMENT_BACKOFF_CAP_MS: integer(1, 3_600_000)
    .default(300_000)
    .describe('Longest delay between two settlement attempts.'),
  /**
   * The attempt budget is time (issue 36): a payment the acquirer keeps answering with a
   * retryable error is retried this long after its first counted failure, then dead-lettered.
   * An outage (calls not sent, breaker open) does not count; an unknown outcome is asked about
   * before any dead letter.
   */
  SETTLEMENT_RETRY_WINDOW_SECONDS: integer(0, 30 * 86_400)
    .default(86_400)
    .describe(
      'How long a payment is retried after its first failed attempt before it is dead-lettered.',
    ),
  /**
   * A claimed job is another worker's after this long: it must outlast an attempt, so boot
   * refuses a lease not above ACQUIRER_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS (config.ts).
   */
  SETTLEMENT_LEASE_MS: integer(100, 3_600_000)
    .default(30_000)
    .describe(
      'How long a claimed settlement job belongs to its worker before another may take it.',
    ),
  /**
   * Jobs in flight per settlement process. A slot is held through the claim, the acquirer call
   * and the grouped completion, so one process settles at most about this many per (acquirer
   * latency + completion time): 16 capped it near 210/s on the 2-core bench machine even with a
   * zero-latency acquirer (DESIGN 57).
   */
  SETTLEMENT_CONCURRENCY: integer(1, 1_000)
    .default(64)
    .describe('Acquirer calls in flight per settlement process.'),
  /** Batches of this many partitions are recorded at once; each is one short transaction. */
  SETTLEMENT_CONSUMER_PARTITIONS: integer(1, 1_000)
    .default(6)
    .describe('Partitions whose batches the settlement consumer records at once.'),
  /** A few hundred rows per statement amortise the commit; more only lengthens the transaction. */
  SETTLEMENT_INTAKE_BATCH_MAX: integer(1, 10_000)
    .default(500)
    .describe('Most records the settlement consumer records in one transaction.'),
  /** Fallback poll for due retries; new work wakes the worker at once. */
  SETTLEMENT_POLL_MS: integer(10, 60_000)
    .default(500)
    .describe('Fallback poll of the settlement worker for due retries.'),
  /** Refunds have their own job settings; the defaults are the charges' (DESIGN 106). */
  REFUND_MAX_ATTEMPTS: integer(1, 100_000)
    .default(1_000)
    .describe(
      'Most acquirer attempts per refund (calls not sent are not attempts) before its event is dead-lettered, whatever the retry window.',
    ),
  REFUND_BACKOFF_BASE_MS: integer(1, 600_000)
    .default(200)
    .describe('Base of the refund retry backoff (full jitter, doubling per attempt).'),
  REFUND_BACKOFF_CAP_MS: integer(1, 3_600_000)
    .default(300_000)
    .describe('Longest delay between two refund attempts.'),
  REFUND_RETRY_WINDOW_SECONDS: integer(0, 30 * 86_400)
    .default(86_400)
    .describe(
      'How long a refund is retried after its first failed attempt before it is dead-lettered.',
    ),
  /** Checked at boot like SETTLEMENT_LEASE_MS: above ACQUIRER_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS. */
  REFUND_LEASE_MS: integer(100, 3_600_000)
    .default(30_000)
    .describe('How long a claimed refund job belongs to its worker before another may take it.'),
  REFUND_CONCURRENCY: integer(1, 1_000)
    .default(64)
    .describe('Refund acquirer calls in flight per settlement process.'),
  REFUND_POLL_MS: integer(10, 60_000)
    .default(500)
    .describe('Fallback poll of the refund worker for due retries.'),
  /**
   * Issue 40 (DESIGN 131): a manual payment's authorization is captured or canceled by then
   * (`capture_before`), else the expiry job voids it and cancels the payment (reason `expired`).
   * Card holds last 5-7 days; tests use seconds.
   */
  AUTHORIZATION_WINDOW_SECONDS: integer(1, 30 * 86_400)
    .default(604_800)
    .describe(
      "How long a manual payment's authorization may be captured (capture_before) before it is voided and canceled as expired.",
    ),
  /** An acquirer that has not answered by then is treated as a transient failure. */
  ACQUIRER_TIMEOUT_MS: integer(10, 120_000)
    .default(2_000)
    .describe('Timeout of one acquirer call (then a transient failure).'),
  /**
   * The acquirer's circuit breaker in the settlement role (DESIGN 107): this many calls in a row
   * that never reached it or whose outcome is unknown open it.
   */
  ACQUIRER_BREAKER_FAILURES: integer(1, 10_000)
    .default(5)
    .describe(
      'Consecutive acquirer calls not sent or with an unknown outcome that open the circuit breaker.',
    ),
  /** Open this long (or the acquirer's Retry-After, if longer), then one probe job. */
  ACQUIRER_BREAKER_OPEN_MS: integer(10, 600_000)
    .default(5_000)
    .describe('How long the acquirer circuit breaker stays open before one probe job is tried.'),
  /** Simulator only: latency added to every call, for load tests. */
  ACQUIRER_SIM_LATENCY_MS: integer(0, 60_000)
    .default(0)
    .describe('Simulator only: latency added to every call.'),
  /** Simulator only: probability of a random transient failure, for load tests. */
  ACQUIRER_SIM_FAILURE_RATE: z
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, { message: 'must be a number between 0 and 1' })
    .transform(Number)
    .default(0)
    .describe('Simulator only: probability (0-1) of a random transient failure.'),
  /**
   * Where settlement and the refund worker reach the acquirer (the `acquirer` role, or a real
   * one). Unset: the simulator runs inside the settlement process, on its login (tests, the
   * all-in-one).
   */
  ACQUIRER_URL: urlWithProtocol(['http:', 'https:'], 'http://127.0.0.1:3100')
    .optional()
    .describe(
      'Base URL of the acquirer process (the `acquirer` role), `http://` or `https://`; unset: an in-process simulator.',
    ),
  /** The acquirer role's own HTTP listener (POST /charges, /refunds, /healthz, /readyz). */
  ACQUIRER_PORT: integer(0, 65535)
    .default(3100)
    .describe('Port the `acquirer` role listens on (0 picks a free port).'),
  ACQUIRER_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('Address the `acquirer` role listens on.'),
  /** A readiness probe must answer before the orchestrator's own timeout (typically 1-5 s). */
  READINESS_TIMEOUT_MS: integer(100, 60_000)
    .default(2_000)
    .describe('Bound of each dependency check of `/readyz`.'),
  /** Long enough to finish in-flight requests, shorter than a typical 30 s SIGKILL grace period. */
  SHUTDOWN_TIMEOUT_MS: integer(100, 120_000)
    .default(15_000)
    .describe('Bound of a graceful shutdown after SIGTERM/SIGINT.'),
  /**
   * After SIGTERM the API answers /readyz `draining` (503) and keeps serving this long before it
   * closes its listener, so a load balancer sees it and stops sending first. Part of the
   * SHUTDOWN_TIMEOUT_MS bound; SIGINT (Ctrl-C) skips it.
   */
  SHUTDOWN_DRAIN_MS: integer(0, 60_000)
    .default(5_000)
    .describe(
      'After SIGTERM, how long the API keeps serving with `/readyz` answering `draining` (503) before closing its listener.',
    ),
  /**
   * The internal listener of every process (API included): /metrics, the detailed /readyz and
   * /healthz. 9464 is the usual Prometheus exporter port; 0 picks a free port (logged).
   */
  METRICS_PORT: integer(0, 65535)
    .default(9464)
    .describe(
      'Port of the internal listener of every process: `/metrics`, detailed `/readyz`, `/healthz` (0 picks one and logs it).',
    ),
  /** Loopback by default: metrics and dependency detail are for the node's agents, not the public. */
  INTERNAL_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe("Address the internal listener binds (loopback: for the node's agents only)."),
  /** Rows per claim-publish-mark round: amortises the round trips, still one fast produce request. */
  RELAY_BATCH_SIZE: integer(1, 10_000)
    .default(500)
    .describe('Outbox rows per claim-publish-mark round.'),
  /** Loops per relay process: with 2, one publishes while the other waits on Postgres (bench). */
  RELAY_WORKERS: integer(1, 16)
    .default(2)
    .describe('Relay loops per process, each with its own producer.'),
  /** Fallback when a notification is missed (listener reconnecting) and to pick up retried rows. */
  RELAY_POLL_INTERVAL_MS: integer(10, 600_000)
    .default(1_000)
    .describe('Fallback poll of the relay (NOTIFY wakes it at once).'),
  /**
   * Must exceed the longest relay send (relaySendBoundMs: 47 s at the default request timeout),
   * or the relay refuses to start: a claim is sent only while its lease outlasts a send (DESIGN 38).
   */
  RELAY_LEASE_MS: integer(100, 3_600_000)
    .default(60_000)
    .describe('How long a claimed outbox row belongs to its relay before another may take it.'),
  /** A refusal that repeats 5 times over ~15 s (too large, invalid) will not heal: park it. */
  RELAY_MAX_ATTEMPTS: integer(1, 1_000)
    .default(5)
    .describe('Refused publishes of one row before it is parked.'),
  /** An hour of published rows answers "was it sent?"; Kafka keeps the events themselves. */
  OUTBOX_RETENTION_SECONDS: integer(0, 30 * 86_400)
    .default(3_600)
    .describe('Published outbox rows are deleted after this long.'),
  /**
   * A refused record's letter: the topic is the record, the row only the way there. A dead job's
   * letter stays while the job is dead, whatever its age (DESIGN 111).
   */
  DEAD_LETTER_RETENTION_SECONDS: integer(0, 90 * 86_400)
    .default(7 * 86_400)
    .describe(
      'Dead letters already published to the dead-letter topic are deleted after this long, except those of jobs still dead.',
    ),
};
