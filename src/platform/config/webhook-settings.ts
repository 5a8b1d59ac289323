import { durationList, integer, networkList } from './config-fields.js';

/**
 * The delays between a delivery's attempts, `5s,5m,30m` or `5000,300000,1800000`: one delay per
 * retry, so the list's length + 1 is the number of attempts. Each delay is jittered when used.
 */
const retrySchedule = durationList({
  maxMs: 7 * 86_400_000,
  maxEntries: 50,
  example: '5000,300000 or 5s,5m,30m',
});

/** Webhook endpoints and their deliveries (part of configSchema; issue 27, DESIGN "Webhooks"). */
export const webhookSettings = {
  /**
   * Deliveries go to public addresses only: an endpoint URL whose host resolves into one of the
   * private, loopback, link-local or other special ranges is refused (422 at creation, and at
   * every connection, so a DNS change cannot point a delivery inward) unless it is in one of
   * these networks. Local use and the tests allow loopback: `127.0.0.0/8,::1/128`.
   */
  WEBHOOK_ALLOWED_NETWORKS: networkList
    .default([])
    .describe(
      'Non-public networks webhook endpoints may still resolve to (CIDR list, e.g. 127.0.0.0/8,::1/128); empty allows public addresses only.',
    ),
  WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT: integer(1, 1_000)
    .default(16)
    .describe('Webhook endpoints one merchant may have.'),
  /** After a rotation the old secret signs too, for this long (Standard Webhooks allows both). */
  WEBHOOK_SECRET_GRACE_SECONDS: integer(0, 30 * 86_400)
    .default(86_400)
    .describe('How long a rotated-out webhook secret still signs deliveries.'),
  WEBHOOK_REPLAY_MAX_EVENTS: integer(1, 100_000)
    .default(10_000)
    .describe('Most events one replay request re-sends to an endpoint.'),
  /** A delivery not answered 2xx within this long failed and is retried. */
  WEBHOOK_TIMEOUT_MS: integer(100, 60_000)
    .default(10_000)
    .describe('Longest a webhook delivery waits for the endpoint to answer.'),
  /**
   * Standard Webhooks' example schedule (5s, 5m, 30m, 2h, 5h, 10h, 10h) with four more 10h
   * retries, so a delivery is retried for about three days (67.6 h over 12 attempts).
   */
  WEBHOOK_RETRY_SCHEDULE: retrySchedule
    .default([
      5_000,
      300_000,
      1_800_000,
      7_200_000,
      18_000_000,
      ...Array<number>(6).fill(36_000_000),
    ])
    .describe(
      'Delays between webhook delivery attempts, comma-separated, each in ms or with a unit (`5s,5m,30m`); jittered, Retry-After honoured.',
    ),
  WEBHOOK_CONCURRENCY: integer(1, 1_000)
    .default(32)
    .describe('Webhook deliveries in flight per webhooks process.'),
  /** One slow endpoint holds at most this many of a process' slots. */
  WEBHOOK_ENDPOINT_CONCURRENCY: integer(1, 100)
    .default(4)
    .describe('Deliveries in flight to one endpoint per webhooks process.'),
  /** One merchant's backlog or replay holds at most this many slots of the whole fleet. */
  WEBHOOK_MERCHANT_CONCURRENCY: integer(1, 1_000)
    .default(8)
    .describe('Deliveries in flight for one merchant across all webhooks processes.'),
  /** Must outlast an attempt: boot refuses a lease not above WEBHOOK_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS. */
  WEBHOOK_LEASE_MS: integer(100, 3_600_000)
    .default(30_000)
    .describe('How long a claimed webhook delivery belongs to its worker.'),
  WEBHOOK_POLL_MS: integer(10, 60_000)
    .default(250)
    .describe('Fallback poll of the webhooks worker for due deliveries.'),
  WEBHOOK_EVENT_RETENTION_SECONDS: integer(3_600, 366 * 86_400)
    .default(30 * 86_400)
    .describe('How long webhook events and their deliveries are kept (replay window).'),
};
