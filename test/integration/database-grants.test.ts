import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/platform/database/migration-runner.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import type { ServiceRole } from '../support/role-login.js';

/**
 * Issue 38 item 4 (DESIGN 116): each login may write exactly what its code writes. Every write
 * on every table of the schema (INSERT, DELETE, TRUNCATE, UPDATE of each column) is attempted on
 * every service login, and must succeed where the table below allows it and be refused (42501)
 * everywhere else. The table is this test's own, written from the code's statements, not read
 * from service-grants.ts: widening a grant there fails here.
 */

interface Writes {
  insert?: true;
  delete?: true;
  update?: readonly string[];
}

const JOB_ENGINE = [
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
];
const JOB_REVIVAL = [...JOB_ENGINE, 'replay_token', 'revived_at'];
const BOOKS = [
  'acquirer_simulator_calls',
  'acquirer_simulator_charges',
  'acquirer_simulator_refunds',
  'acquirer_simulator_refund_calls',
  'acquirer_simulator_holds',
  'acquirer_simulator_hold_operations',
  'acquirer_simulator_hold_calls',
];
/** A capture or void decides a hold (src/acquirer/hold-books.ts). */
const HOLD_DECISION = ['state', 'amount_captured', 'amount_released', 'updated_at'];
const holdBooks = (writes: Writes): Record<string, Writes> =>
  Object.fromEntries(
    BOOKS.map((table) => [
      table,
      table === 'acquirer_simulator_holds' ? { ...writes, update: HOLD_DECISION } : writes,
    ]),
  );

const ALLOWED: Record<ServiceRole, Record<string, Writes>> = {
  api: {
    payments: { insert: true, update: ['amount_refunded', 'updated_at'] },
    idempotency_keys: { insert: true, delete: true, update: ['expires_at'] },
    outbox: { insert: true },
    refunds: { insert: true },
    refund_jobs: { insert: true },
    merchant_events: { insert: true },
    payment_hold_decisions: { insert: true },
    hold_jobs: { update: ['next_attempt_at'] },
    webhook_endpoints: {
      insert: true,
      delete: true,
      update: [
        'url',
        'description',
        'enabled_events',
        'disabled_at',
        'disabled_reason',
        'failing_since',
        'updated_at',
      ],
    },
    webhook_endpoint_secrets: { insert: true, delete: true, update: ['expires_at'] },
    webhook_deliveries: {
      insert: true,
      update: ['status', 'failed_reason', 'delivered_at', 'updated_at', 'seq'],
    },
    webhook_delivery_jobs: { insert: true, update: ['next_attempt_at', 'seq'] },
  },
  relay: {
    outbox: {
      delete: true,
      update: [
        'locked_until',
        'lease_owner',
        'published_at',
        'attempts',
        'last_error',
        'parked_at',
      ],
    },
    outbox_wakeups: { update: ['wanted_until'] },
  },
  settlement: {
    processed_events: { insert: true, delete: true },
    settlement_jobs: { insert: true, delete: true, update: JOB_REVIVAL },
    refund_jobs: { delete: true, update: JOB_REVIVAL },
    hold_jobs: { insert: true, delete: true, update: JOB_REVIVAL },
    payment_hold_decisions: { insert: true },
    payments: {
      update: [
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
    refunds: { update: ['status', 'failure_code', 'updated_at'] },
    outbox: { insert: true },
    merchant_events: { insert: true, delete: true },
    webhook_events: { insert: true },
    webhook_deliveries: { insert: true },
    webhook_delivery_jobs: { insert: true },
    dead_letters: {
      insert: true,
      delete: true,
      update: ['attempts', 'next_attempt_at', 'locked_until', 'published_at', 'last_error'],
    },
    // The template's books are shared (acquirer_books_own_login() not called).
    ...holdBooks({ insert: true }),
  },
  webhooks: {
    webhook_delivery_jobs: { delete: true, update: JOB_ENGINE },
    webhook_deliveries: {
      update: [
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
    webhook_delivery_attempts: { insert: true },
    webhook_events: { delete: true },
    webhook_endpoints: {
      update: ['disabled_at', 'disabled_reason', 'failing_since', 'updated_at'],
    },
  },
  acquirer: holdBooks({ insert: true, delete: true }),
};

const ROLES = Object.keys(ALLOWED) as ServiceRole[];
const REFUSED = '42501';
const logger = createLogger(testConfig({ LOG_LEVEL: 'silent' }), { service: 'test' });

interface Write {
  what: string;
  sql: string;
  allowed: (writes: Writes | undefined) => boolean;
}

/** Every write on every table of the schema, each touching no row (WHERE false). */
async function everyWrite(db: TestDatabase): Promise<Write[]> {
  const { rows } = await db.pool.query<{ table: string; columns: string[]; insertable: string }>(
    `SELECT c.table_name AS table,
            array_agg(c.column_name::text ORDER BY c.ordinal_position) AS columns,
            (array_agg(c.column_name::text ORDER BY c.ordinal_position)
               FILTER (WHERE c.identity_generation IS DISTINCT FROM 'ALWAYS'
                         AND c.is_generated = 'NEVER'))[1] AS insertable
       FROM information_schema.columns c
       JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
      GROUP BY c.table_name ORDER BY c.table_name`,
  );
  return rows.flatMap(({ table, columns, insertable }) => [
    {
      what: `INSERT ${table}`,
      sql: `INSERT INTO ${table} (${insertable}) SELECT NULL WHERE false`,
      allowed: (w) => w?.insert === true,
    },
    {
      what: `DELETE ${table}`,
      sql: `DELETE FROM ${table} WHERE false`,
      allowed: (w) => w?.delete === true,
    },
    { what: `TRUNCATE ${table}`, sql: `TRUNCATE ${table}`, allowed: () => false },
    ...columns.map((column) => ({
      what: `UPDATE ${table}.${column}`,
      sql: `UPDATE ${table} SET ${column} = DEFAULT WHERE false`,
      allowed: (w: Writes | undefined) => w?.update?.includes(column) === true,
    })),
  ]);
}

/** Each write as each login whose outcome is not what ALLOWED says ('ok' or 42501). */
async function mismatches(db: TestDatabase): Promise<string[]> {
  const writes = await everyWrite(db);
  const found: string[] = [];
  for (const role of ROLES) {
    const client = new pg.Client({ connectionString: db.roleUrl(role) });
    await client.connect();
    try {
      for (const write of writes) {
        const table = write.what.split(/[ .]/)[1] ?? '';
        const expected = write.allowed(ALLOWED[role][table]) ? 'ok' : REFUSED;
        const got = await client.query(write.sql).then(
          () => 'ok',
          (error: unknown) => (error as { code?: string }).code ?? String(error),
        );
        if (got !== expected) found.push(`payments_${role} ${write.what}: ${got}, not ${expected}`);
      }
    } finally {
      await client.end();
    }
  }
  return found;
}

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('service-grants.ts as applied by the migration runner', () => {
  it('when each login attempts every write on every table, then exactly the writes its code makes succeed and the rest are refused 42501', async () => {
    const writes = await everyWrite(db);
    // The schema is all there (a broken query would make an empty matrix pass).
    expect(writes.length).toBeGreaterThan(250);
    expect(await mismatches(db)).toEqual([]);
  });

  it('when an old migration or an operator granted more, then the next migration run takes it away', async () => {
    await db.pool.query('GRANT UPDATE ON refunds TO payments_settlement');
    await db.pool.query('GRANT INSERT ON payments TO payments_relay');
    await db.pool.query('GRANT UPDATE (merchant_id) ON webhook_endpoints TO payments_api');
    await db.pool.query('GRANT ALL ON outbox_wakeups TO payments_webhooks');

    const { applied } = await applyMigrations(db.url, logger);

    expect(applied).toEqual([]);
    expect(await mismatches(db)).toEqual([]);
  });

  it('when the grants are applied again, then every privilege of the schema is the same (idempotent)', async () => {
    const acls = async () =>
      (
        await db.pool.query<{ acl: string }>(
          `SELECT c.relname || coalesce(c.relacl::text, '') ||
                  coalesce(string_agg(a.attname || a.attacl::text, ',' ORDER BY a.attnum), '') AS acl
             FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attacl IS NOT NULL
            WHERE c.relnamespace = current_schema()::regnamespace
            GROUP BY c.relname, c.relacl::text ORDER BY c.relname`,
        )
      ).rows.map((row) => row.acl);
    await applyMigrations(db.url, logger);
    const before = await acls();
    await applyMigrations(db.url, logger);
    expect(await acls()).toEqual(before);
  });

  it('when grants are applied while the logins write, then no statement is ever refused (no window without grants)', async () => {
    let stop = false;
    const refused: string[] = [];
    let statements = 0;
    const writer = async (role: ServiceRole, sql: string) => {
      const client = new pg.Client({ connectionString: db.roleUrl(role) });
      await client.connect();
      try {
        while (!stop) {
          statements++;
          await client.query(sql).catch((error: unknown) => {
            refused.push(`${role}: ${(error as Error).message}`);
          });
        }
      } finally {
        await client.end();
      }
    };
    const writers = [
      writer('settlement', "UPDATE refunds SET status = 'failed' WHERE false"),
      writer('api', 'INSERT INTO payments (id) SELECT NULL WHERE false'),
      writer('relay', 'DELETE FROM outbox WHERE false'),
    ];
    try {
      for (let run = 0; run < 5; run++) await applyMigrations(db.url, logger);
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    expect(statements).toBeGreaterThan(100);
    expect(refused).toEqual([]);
  });
});
