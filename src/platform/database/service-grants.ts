/**
 * Every privilege of every service login, in one place (DESIGN 116, docs/operations.md "Database
 * logins"). The migration runner applies this list after every run (apply-grants.ts): for each
 * login it revokes everything on the schema's tables, sequences and routines, then grants exactly
 * what is here, in one transaction. A privilege not listed is taken away, whatever an old
 * migration granted. A new table or statement needs its line here, not a grant in a migration.
 *
 * Derived from the SQL each role runs (src/); UPDATE is per column wherever a role writes only
 * some columns. Reads, INSERT and DELETE are per table (a new column of a table is covered).
 * Foreign-key checks and ON DELETE CASCADE run as the tables' owner and need nothing here.
 * `FOR UPDATE`/`FOR SHARE` needs UPDATE on some column; ON CONFLICT DO UPDATE, on its SET columns.
 */

export type Privilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

export type ServiceLogin =
  | 'payments_api'
  | 'payments_relay'
  | 'payments_settlement'
  | 'payments_webhooks'
  | 'payments_acquirer';

export interface TableGrant {
  tables: readonly string[];
  privileges: readonly Privilege[];
  /** Only these columns (GRANT p (columns) ON ...); absent: the whole table. */
  columns?: readonly string[];
  /** Left out once acquirer_books_own_login() recorded the books as the acquirer's (0026). */
  whileBooksShared?: true;
}

export interface LoginGrants {
  login: ServiceLogin;
  grants: readonly TableGrant[];
}

/** The job engine's columns a claim, retry and dead-lettering write (src/jobs/job-store.ts). */
const JOB_ENGINE_COLUMNS = [
  'state',
  'attempts',
  'next_attempt_at',
  'locked_until',
  'lease_owner',
  'first_failure_at',
  'last_failure_at',
  'last_error_class',
  'last_error',
  'needs_inquiry',
  'last_inquiry',
  'not_sent',
] as const;

/** ... and what a revival by dlq:replay's copy writes besides (src/jobs/job-revive.ts). */
const JOB_REVIVAL_COLUMNS = [...JOB_ENGINE_COLUMNS, 'replay_token', 'revived_at'] as const;

const ACQUIRER_BOOKS = [
  'acquirer_simulator_calls',
  'acquirer_simulator_charges',
  'acquirer_simulator_refunds',
  'acquirer_simulator_refund_calls',
  'acquirer_simulator_holds',
  'acquirer_simulator_hold_operations',
  'acquirer_simulator_hold_calls',
] as const;

/** A hold's capture or void (src/acquirer/hold-simulator.ts): its amounts and state, no more. */
const HOLD_DECISION_COLUMNS = [
  'state',
  'amount_captured',
  'amount_released',
  'updated_at',
] as const;

export const SERVICE_GRANTS: readonly LoginGrants[] = [
  {
    login: 'payments_api',
    grants: [
      // Authentication joins keys, merchants and their tier.
      { tables: ['merchants', 'api_keys', 'rate_limit_tiers'], privileges: ['SELECT'] },
      { tables: ['payments'], privileges: ['SELECT', 'INSERT'] },
      // A refund locks its payment (FOR UPDATE) and reserves the amount: never status or amount.
      { tables: ['payments'], privileges: ['UPDATE'], columns: ['amount_refunded', 'updated_at'] },
      { tables: ['idempotency_keys'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      // The reaper's FOR UPDATE SKIP LOCKED needs UPDATE on a column; no statement updates a key.
      { tables: ['idempotency_keys'], privileges: ['UPDATE'], columns: ['expires_at'] },
      // Outbox rows are written, read back only for the key the create statement returns; the
      // outbox trigger reads outbox_wakeups as the inserting login.
      { tables: ['outbox'], privileges: ['INSERT'] },
      { tables: ['outbox'], privileges: ['SELECT'], columns: ['aggregate_id'] },
      { tables: ['outbox_wakeups'], privileges: ['SELECT'] },
      // Every event's merchant copy, written with its outbox row; GET /events reads it (0036).
      { tables: ['merchant_events'], privileges: ['SELECT', 'INSERT'] },
      { tables: ['refunds', 'refund_jobs'], privileges: ['SELECT', 'INSERT'] },
      // A capture or cancel (issue 40): its decision under the payment's lock, its job made due.
      { tables: ['payment_hold_decisions'], privileges: ['SELECT', 'INSERT'] },
      { tables: ['hold_jobs'], privileges: ['SELECT'] },
      { tables: ['hold_jobs'], privileges: ['UPDATE'], columns: ['next_attempt_at'] },
      // The merchant's webhook API: endpoints (PATCH: never the id, merchant or creation time).
      { tables: ['webhook_endpoints'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      {
        tables: ['webhook_endpoints'],
        privileges: ['UPDATE'],
        columns: [
          'url',
          'description',
          'enabled_events',
          'disabled_at',
          'disabled_reason',
          'failing_since',
          'updated_at',
        ],
      },
      // Secrets: a rotation gives the current one its expiry; a secret itself is never rewritten.
      { tables: ['webhook_endpoint_secrets'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      { tables: ['webhook_endpoint_secrets'], privileges: ['UPDATE'], columns: ['expires_at'] },
      { tables: ['webhook_events', 'webhook_delivery_attempts'], privileges: ['SELECT'] },
      // Retry and replay: the delivery back to pending, its job inserted or made due now; a
      // replay gives a re-opened delivery and its job a new seq, in event order (DESIGN 119).
      { tables: ['webhook_deliveries', 'webhook_delivery_jobs'], privileges: ['SELECT', 'INSERT'] },
      {
        tables: ['webhook_deliveries'],
        privileges: ['UPDATE'],
        columns: ['status', 'failed_reason', 'delivered_at', 'updated_at', 'seq'],
      },
      {
        tables: ['webhook_delivery_jobs'],
        privileges: ['UPDATE'],
        columns: ['next_attempt_at', 'seq'],
      },
    ],
  },
  {
    login: 'payments_relay',
    grants: [
      // Claim, mark, release, park, retention DELETE, metrics; never an event's content.
      { tables: ['outbox'], privileges: ['SELECT', 'DELETE'] },
      {
        tables: ['outbox'],
        privileges: ['UPDATE'],
        columns: [
          'locked_until',
          'lease_owner',
          'published_at',
          'attempts',
          'last_error',
          'parked_at',
        ],
      },
      // An idle relay asks writers to NOTIFY (0016).
      { tables: ['outbox_wakeups'], privileges: ['SELECT'] },
      { tables: ['outbox_wakeups'], privileges: ['UPDATE'], columns: ['wanted_until'] },
    ],
  },
  {
    login: 'payments_settlement',
    grants: [
      // Event ids seen (dedup, I4), deleted after PROCESSED_EVENT_RETENTION_SECONDS.
      { tables: ['processed_events'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      { tables: ['settlement_jobs'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      { tables: ['refund_jobs'], privileges: ['SELECT', 'DELETE'] },
      // An authorization's hold job (written with requires_capture), its expiry's decision.
      { tables: ['hold_jobs'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      { tables: ['payment_hold_decisions'], privileges: ['SELECT', 'INSERT'] },
      {
        tables: ['settlement_jobs', 'refund_jobs', 'hold_jobs'],
        privileges: ['UPDATE'],
        columns: JOB_REVIVAL_COLUMNS,
      },
      // A payment's status and failure code, and releasing a failed refund's amount.
      { tables: ['payments'], privileges: ['SELECT'] },
      {
        tables: ['payments'],
        privileges: ['UPDATE'],
        columns: [
          'status',
          'failure_code',
          'updated_at',
          'amount_refunded',
          'capture_before',
          'amount_captured',
          'canceled_at',
          'cancellation_reason',
        ],
      },
      // A refund's outcome; never its amount, payment or merchant.
      { tables: ['refunds'], privileges: ['SELECT'] },
      {
        tables: ['refunds'],
        privileges: ['UPDATE'],
        columns: ['status', 'failure_code', 'updated_at'],
      },
      // Result events, fanned out to the merchant's endpoints in the same statement (0023).
      { tables: ['outbox'], privileges: ['INSERT'] },
      { tables: ['outbox_wakeups'], privileges: ['SELECT'] },
      // Their merchant copy (0036), deleted after EVENT_RETENTION_DAYS by this role's reaper.
      { tables: ['merchant_events'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      {
        tables: ['webhook_endpoints'],
        privileges: ['SELECT'],
        columns: ['id', 'merchant_id', 'enabled_events', 'disabled_at'],
      },
      {
        tables: ['webhook_events', 'webhook_deliveries', 'webhook_delivery_jobs'],
        privileges: ['SELECT', 'INSERT'],
      },
      // Dead letters waiting for (or published to) the dead-letter topic, then deleted.
      { tables: ['dead_letters'], privileges: ['SELECT', 'INSERT', 'DELETE'] },
      {
        tables: ['dead_letters'],
        privileges: ['UPDATE'],
        columns: ['attempts', 'next_attempt_at', 'locked_until', 'published_at', 'last_error'],
      },
      // The simulator's books while settlement may run it in-process (ACQUIRER_URL unset).
      { tables: ACQUIRER_BOOKS, privileges: ['SELECT', 'INSERT'], whileBooksShared: true },
      {
        tables: ['acquirer_simulator_holds'],
        privileges: ['UPDATE'],
        columns: HOLD_DECISION_COLUMNS,
        whileBooksShared: true,
      },
    ],
  },
  {
    login: 'payments_webhooks',
    grants: [
      // The delivery jobs (claim, retry, complete, give up); webhook jobs are never revived.
      { tables: ['webhook_delivery_jobs'], privileges: ['SELECT', 'DELETE'] },
      { tables: ['webhook_delivery_jobs'], privileges: ['UPDATE'], columns: JOB_ENGINE_COLUMNS },
      // The deliveries they move and the attempts they record.
      { tables: ['webhook_deliveries'], privileges: ['SELECT'] },
      {
        tables: ['webhook_deliveries'],
        privileges: ['UPDATE'],
        columns: [
          'status',
          'attempts',
          'last_attempt_at',
          'last_status_code',
          'last_latency_ms',
          'last_error',
          'delivered_at',
          'failed_reason',
          'updated_at',
        ],
      },
      { tables: ['webhook_delivery_attempts'], privileges: ['SELECT', 'INSERT'] },
      // The event sent, deleted after WEBHOOK_EVENT_RETENTION_SECONDS with its deliveries.
      { tables: ['webhook_events'], privileges: ['SELECT', 'DELETE'] },
      // Where to send and how to sign; an endpoint that answers 410 or keeps failing is disabled.
      { tables: ['webhook_endpoints', 'webhook_endpoint_secrets'], privileges: ['SELECT'] },
      {
        tables: ['webhook_endpoints'],
        privileges: ['UPDATE'],
        columns: ['disabled_at', 'disabled_reason', 'failing_since', 'updated_at'],
      },
    ],
  },
  {
    login: 'payments_acquirer',
    grants: [
      // The simulator's books and nothing else, deleted after ACQUIRER_BOOKS_RETENTION_SECONDS.
      { tables: ACQUIRER_BOOKS, privileges: ['SELECT', 'INSERT', 'DELETE'] },
      {
        tables: ['acquirer_simulator_holds'],
        privileges: ['UPDATE'],
        columns: HOLD_DECISION_COLUMNS,
      },
    ],
  },
];
