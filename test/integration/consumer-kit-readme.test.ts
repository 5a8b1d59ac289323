import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId, type PaymentEventType } from '../../src/payments/payment-event-id.js';
import {
  createIdempotentProducer,
  createKafka,
  ensureTopics,
  type Admin,
  type KafkaClient,
} from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { testConfig, uniqueSuffix, uniqueTopic } from '../support/isolation.js';
import {
  readShellSteps,
  runShellStep,
  startShellStep,
  type BackgroundStep,
} from '../support/readme-shell-steps.js';

// examples/consumer-kit/README.md's commands, run as written, one at a time, as a new user runs
// them after `npm run up`: the environment starts without the stack's URLs (the README's own
// `eval "$(bash scripts/stack.sh env)"` must provide them). The consumer reads a fresh topic
// (KAFKA_TOPIC and GROUP_ID, the settings the README lists) holding three settled payments in a
// currency of this run's own, one settled event twice: the table counts each payment once.

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const README = path.join(REPO_ROOT, 'examples/consumer-kit/README.md');
/** The stack's URLs, which a new user's shell does not have before the README's first step. */
const STACK_VARIABLES =
  /^(DATABASE_URL|MIGRATION_DATABASE_URL|REDIS_URL|KAFKA_BROKERS|[A-Z]+_DATABASE_URL)$/;

const native = inject('services').source !== 'testcontainers';
const topic = uniqueTopic('readme');
const group = `readme-${uniqueSuffix()}`;
const currency = `T${uniqueSuffix().toUpperCase()}`;
const payments = [
  { id: randomUUID(), amount: 1_000 },
  { id: randomUUID(), amount: 2_000 },
  { id: randomUUID(), amount: 3_000 },
];

let kafka: KafkaClient;
let admin: Admin;
let exampleDatabaseUrl: string | undefined;
let background: BackgroundStep | undefined;

function paymentEvent(payment: { id: string; amount: number }, type: PaymentEventType) {
  return toKafkaRecord({
    eventId: paymentEventId(payment.id, type),
    eventType: type,
    aggregateId: payment.id,
    data: { id: payment.id, object: 'payment', amount: payment.amount, currency },
    createdAt: new Date(),
  });
}

beforeAll(async () => {
  if (!native) return;
  const config = testConfig();
  kafka = createKafka(config, createLogger(config));
  admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic], 1);
  const [first, second, third] = payments as [
    (typeof payments)[0],
    (typeof payments)[0],
    (typeof payments)[0],
  ];
  const producer = createIdempotentProducer(kafka);
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: [
        paymentEvent(first, 'payment.created'),
        paymentEvent(first, 'payment.settled'),
        paymentEvent(second, 'payment.created'),
        paymentEvent(second, 'payment.settled'),
        paymentEvent(second, 'payment.settled'), // a republished copy: must add nothing
        paymentEvent(third, 'payment.created'),
        paymentEvent(third, 'payment.settled'),
      ],
    });
  } finally {
    await producer.disconnect();
  }
});

afterAll(async () => {
  background?.kill();
  if (!native) return;
  if (exampleDatabaseUrl !== undefined) {
    // The example's database is the reader's too: remove this run's rows only.
    const client = new pg.Client({ connectionString: exampleDatabaseUrl });
    await client.connect();
    const subjects = payments.map((payment) => payment.id);
    await client.query('DELETE FROM settled_totals WHERE currency = $1', [currency]);
    await client.query('DELETE FROM settled_totals_inbox WHERE subject = ANY($1)', [subjects]);
    await client.query('DELETE FROM settled_totals_inbox_subjects WHERE subject = ANY($1)', [
      subjects,
    ]);
    await client.end();
  }
  await admin.deleteGroups([group]).catch(() => undefined);
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
});

/** This run's row of the example's table, once the table exists. */
async function totalsRow(url: string): Promise<{ amount: string; payments: number } | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ amount: string; payments: number }>(
      'SELECT amount, payments FROM settled_totals WHERE currency = $1',
      [currency],
    );
    return rows[0];
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return undefined; // not created yet
    throw error;
  } finally {
    await client.end();
  }
}

describe.skipIf(!native)('examples/consumer-kit/README.md', () => {
  it('when its commands are run as written against the stack, then each settled payment is counted once', async () => {
    const steps = readShellSteps(await readFile(README, 'utf8'));
    expect(steps.map((step) => step.untilCtrlC)).toContain(true);
    let env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !STACK_VARIABLES.test(name)),
    );
    env = { ...env, KAFKA_TOPIC: topic, GROUP_ID: group };
    let counters: Record<string, number> | undefined;
    let shown = '';
    for (const step of steps) {
      if (!step.untilCtrlC) {
        const result = await runShellStep(step.command, {
          cwd: REPO_ROOT,
          env,
          timeoutMs: 180_000,
        });
        expect(result.code, `${step.command}\n${result.stderr}`).toBe(0);
        env = result.env;
        shown = result.stdout;
        continue;
      }
      exampleDatabaseUrl = env.DATABASE_URL;
      expect(exampleDatabaseUrl, 'DATABASE_URL after the steps before the consumer').toMatch(
        /\/settled_totals$/,
      );
      background = startShellStep(step.command, { cwd: REPO_ROOT, env });
      const deadline = Date.now() + 90_000;
      let row = await totalsRow(exampleDatabaseUrl ?? '');
      while ((row?.payments ?? 0) < payments.length && Date.now() < deadline) {
        if (background.output().code !== null) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
        row = await totalsRow(exampleDatabaseUrl ?? '');
      }
      const stopped = await background.interrupt(30_000);
      expect(stopped.code, `${step.command}\n${stopped.stderr}`).toBe(0);
      const lastLine = stopped.stdout.trimEnd().split('\n').at(-1) ?? '';
      counters = JSON.parse(lastLine) as Record<string, number>;
    }
    // Six events applied once each, the copy skipped by the inbox.
    expect(counters).toMatchObject({ applied: 6, duplicates: 1, failed: 0, outOfOrder: 0 });
    expect(await totalsRow(exampleDatabaseUrl ?? '')).toEqual({ amount: '6000', payments: 3 });
    // The last step prints the table: this run's currency with its total.
    expect(shown).toMatch(new RegExp(`${currency}.*6000`));
  }, 300_000);
});
