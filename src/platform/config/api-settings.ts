import { z } from 'zod';
import { integer, trustProxySetting } from './config-fields.js';

/** The API's idempotency, HTTP bounds, rate limits and outage logging (part of configSchema). */
export const apiSettings = {
  /** Clients retry for hours after an outage; a day covers that and bounds the table's size. */
  IDEMPOTENCY_KEY_TTL_SECONDS: integer(1, 30 * 86_400)
    .default(86_400)
    .describe('How long an Idempotency-Key is remembered (database record and cached response).'),
  /**
   * Longer than a slow request's database work (p99 is milliseconds), short enough that a
   * crashed holder frees the key quickly. Expiry is safe: the database constraint is the guard.
   */
  IDEMPOTENCY_LOCK_TTL_MS: integer(50, 600_000)
    .default(5_000)
    .describe('TTL of the Redis lock held while a request with a key is in flight.'),
  /** `reject`: 409 at once while the first request is in flight; `wait`: poll, then replay. */
  IDEMPOTENCY_IN_FLIGHT: z
    .enum(['reject', 'wait'])
    .default('reject')
    .describe(
      'What a duplicate of an in-flight request gets: `reject` (409 at once) or `wait` (poll, then replay or 409).',
    ),
  /** Bound of the `wait` mode: well under common client timeouts (10-30 s). */
  IDEMPOTENCY_WAIT_MS: integer(0, 60_000)
    .default(2_000)
    .describe('Longest a duplicate waits for the first request in `wait` mode.'),
  /** The first request almost always finishes within a second; retrying sooner is wasted. */
  IDEMPOTENCY_RETRY_AFTER_SECONDS: integer(1, 3_600)
    .default(1)
    .describe('`Retry-After` of a 409 for a key still in flight.'),
  /**
   * Group commit (payment-insert-batcher.ts): one statement and one commit carry up to this many
   * concurrent new payments; Postgres' cost per payment falls with the batch (DESIGN, issue 29).
   */
  PAYMENT_BATCH_MAX_ROWS: integer(1, 10_000)
    .default(64)
    .describe(
      'Most new payments one API process writes in one statement (group commit); 1 turns batching off.',
    ),
  /** A request waits at most this long for its batch: a few ms, under a commit's own latency. */
  PAYMENT_BATCH_WINDOW_MS: integer(0, 1_000)
    .default(2)
    .describe(
      "How long a new payment's write waits for others to share its statement; 0 turns batching off.",
    ),
  /**
   * 0: on a CPU-bound machine full batches cost least (measured: ~11 payments per transaction at
   * the bench's concurrency of 16, ~5 with 1 or 2 here, and more CPU per payment). 1-2 send a
   * lone request at once instead of after the window: lower latency where CPU is to spare.
   */
  PAYMENT_BATCH_IN_FLIGHT: integer(0, 64)
    .default(0)
    .describe(
      'While fewer batches than this are being written, a new payment is sent at once (no window); 0: batches wait for the window or max rows.',
    ),
  /** Expired keys are few per second at our rates; once a minute keeps the table near its TTL. */
  IDEMPOTENCY_REAPER_INTERVAL_MS: integer(100, 3_600_000)
    .default(60_000)
    .describe('How often the API role deletes expired idempotency records.'),
  /** Small enough that one DELETE holds its locks for milliseconds, not seconds. */
  IDEMPOTENCY_REAPER_BATCH: integer(1, 100_000)
    .default(1_000)
    .describe('Expired idempotency records deleted per statement.'),
  /**
   * `open`: when Redis is down, keep serving through the database path (correct, slower).
   * `closed`: answer 503 instead, for operators who would rather shed load than lose the lock.
   */
  REDIS_FAILURE_MODE: z
    .enum(['open', 'closed'])
    .default('open')
    .describe('When Redis is down: `open` serves through the database, `closed` answers 503.'),
  /**
   * A caller's W3C trace context: `continue` makes the request's span its child (one trace from
   * the client to settlement), and a caller's sampled flag then decides whether the payment is
   * traced (parent-based samplers). `link` starts a new trace, sampled by this service alone,
   * with a link to the caller's span: for a public edge, where any client could have all its
   * requests traced by sending the flag.
   */
  TRACE_CALLER_CONTEXT: z
    .enum(['continue', 'link'])
    .default('continue')
    .describe(
      "A caller's traceparent: `continue` its trace (its sampled flag counts), or `link` it from a new trace this service samples.",
    ),
  /** A payment request is well under 2 KiB; 16 KiB leaves room for metadata and stops abuse. */
  HTTP_BODY_LIMIT_BYTES: integer(1_024, 1_048_576)
    .default(16_384)
    .describe('Largest accepted request body (larger: 413).'),
  /** Under common client and load-balancer timeouts (10-30 s): the client hears 503, not silence. */
  REQUEST_DEADLINE_MS: integer(100, 600_000)
    .default(5_000)
    .describe(
      'Longest an HTTP request may take; past it the client gets 503 + Retry-After (the work may still commit).',
    ),
  /**
   * Load shedding: at 1,000 payments/s a request is in flight ~15 ms, so ~15 are; 1,000 leaves
   * room for bursts and storms (k6 refund storm: 900) while a flood behind a slow database
   * cannot fill the capped heap (DESIGN 25).
   */
  HTTP_MAX_IN_FLIGHT: integer(1, 1_000_000)
    .default(1_000)
    .describe(
      'Requests one API process serves at once; beyond it 503 + Retry-After at once (health probes exempt).',
    ),
  /** A client that has not sent its headers by then is cut off (Node answers 408). */
  HTTP_HEADERS_TIMEOUT_MS: integer(100, 600_000)
    .default(10_000)
    .describe('Longest a client may take to send the request headers (then 408).'),
  /** Headers and body; a payment body is 2 KiB, so a slow sender is cut off, not read for minutes. */
  HTTP_REQUEST_TIMEOUT_MS: integer(100, 600_000)
    .default(15_000)
    .describe(
      'Longest a client may take to send the whole request, body included (then 408); >= the headers timeout.',
    ),
  /**
   * Bound of every rate-limit call to Redis: a frozen Redis must not stall requests (the
   * gray-failure bound, 100-250 ms); past it the process limits on its own until Redis answers.
   */
  RATE_LIMIT_REDIS_TIMEOUT_MS: integer(10, 5_000)
    .default(150)
    .describe(
      'Bound of each rate-limit call to Redis; past it the process limits from its own memory.',
    ),
  /**
   * Who the client is (`req.ip`, the address failed authentications are counted against).
   * `false`: the socket's peer; no header can change it, so nobody can pose as another address.
   * Behind a load balancer every request then has the balancer's address: name the balancer
   * (its addresses or CIDR range, or a hop count) so the address it appends to X-Forwarded-For
   * is used. `true` believes the left-most entry, which any client writes: never at an edge.
   */
  TRUST_PROXY: trustProxySetting
    .default(false)
    .describe(
      "Express' `trust proxy`: `false` (client = socket peer), `true`, a hop count, or the proxies' IPs, CIDRs, `loopback`, comma-separated.",
    ),
  /**
   * Failed authentications (a valid key never spends) per client address and, separately, per
   * presented key prefix: one a second sustained makes guessing keys pointless, and...
   */
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: integer(1, 1_000_000)
    .default(60)
    .describe(
      'Failed authentications allowed per minute per client address, and per presented key prefix (over it: 429; valid keys always pass).',
    ),
  /** ...a burst of 20 forgives a misconfigured client's first retries. */
  RATE_LIMIT_UNAUTHENTICATED_BURST: integer(1, 1_000_000)
    .default(20)
    .describe('Failed authentications a client address, or a key prefix, may make in a burst.'),
  /** A revoked API key stops working within this long; keeps Postgres off the replay path. */
  AUTH_CACHE_TTL_MS: integer(0, 3_600_000)
    .default(30_000)
    .describe(
      'How long an API key lookup is cached in memory (a revoked key works this long); 0 disables.',
    ),
  /**
   * An unknown key is answered from memory for this long: a client repeating a wrong key costs
   * one lookup per interval. Keys are random, so no key can be created during its negative entry.
   */
  AUTH_NEGATIVE_CACHE_TTL_MS: integer(0, 3_600_000)
    .default(10_000)
    .describe('How long an unknown API key is answered from memory (401); 0 disables.'),
  /** When Postgres is unavailable, clients are told to come back after this many seconds. */
  UNAVAILABLE_RETRY_AFTER_SECONDS: integer(1, 3_600)
    .default(2)
    .describe('`Retry-After` of a 503 when Postgres (or Redis in `closed` mode) is unavailable.'),
  /** One warning per dependency per interval while an outage lasts, one line when it ends. */
  OUTAGE_LOG_INTERVAL_MS: integer(100, 3_600_000)
    .default(30_000)
    .describe('While a dependency is down, how often its outage is logged again (warn).'),
};
