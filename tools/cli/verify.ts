import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';
import { createPool } from '../../src/platform/database/db.js';
import { createKafka } from '../../src/platform/kafka/kafka.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { formatReport } from '../verify/format-report.js';
import { verifyPayments } from '../verify/verify-payments.js';
import type { VerifyScope } from '../verify/verify-scope.js';
import { waitForDrain } from '../verify/wait-for-drain.js';
import { UsageError } from '../../src/cli/run-cli.js';
import { readReceiptsFiles } from '../webhooks/webhook-receipt.js';

const USAGE = `usage: npm run verify -- [--wait <seconds>] [--grace <seconds>] [--key-prefix <prefix>]
                         [--since <ISO time>] [--until <ISO time>] [--no-kafka] [--json]
                         [--webhook-receipts <file>[,<file>...]] [--webhook-grace <seconds>]
  --wait        first let the pipeline drain for up to this long (default 0)
  --grace       payments younger than this are not judged on what they lack yet (default 60)
  --webhook-grace  a webhook delivery younger than this may still be pending, and the drain
                does not wait for it (default: --grace); a checkpoint while load goes on
  --key-prefix  only payments whose Idempotency-Key starts with this (a load test's run id)
  --since       only payments created at or after this time
  --until       only payments created before this time (a checkpoint while load goes on)
  --no-kafka    check the database and the simulator's books only
  --json        print the report as one JSON document instead of text
  --webhook-receipts  receipts files of webhook receivers (npm run webhooks:receiver): each
                delivery to their endpoints is judged on what they received (id, signature, order)
Exit status: 0 no violation, 1 violations found, 2 could not verify.`;

/**
 * `npm run verify`: checks the invariants after any run (DESIGN.md record 62) against the
 * database, the acquirer simulator's books and the Kafka topics named by the usual settings
 * (DATABASE_URL, KAFKA_BROKERS, KAFKA_TOPIC_PAYMENTS, KAFKA_TOPIC_DLQ).
 */
async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      wait: { type: 'string', default: '0' },
      grace: { type: 'string', default: '60' },
      'webhook-grace': { type: 'string' },
      'key-prefix': { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      'no-kafka': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'webhook-receipts': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const wait = seconds('--wait', values.wait);
  const graceSeconds = seconds('--grace', values.grace);
  const webhookGraceSeconds =
    values['webhook-grace'] === undefined
      ? graceSeconds
      : seconds('--webhook-grace', values['webhook-grace']);
  const scope: VerifyScope = {};
  if (values['key-prefix'] !== undefined) {
    if (values['key-prefix'] === '') throw new UsageError('--key-prefix must not be empty');
    scope.keyPrefix = values['key-prefix'];
  }
  if (values.since !== undefined) {
    const since = new Date(values.since);
    if (Number.isNaN(since.getTime())) throw new UsageError('--since must be an ISO 8601 time');
    scope.since = since;
  }
  if (values.until !== undefined) {
    const until = new Date(values.until);
    if (Number.isNaN(until.getTime())) throw new UsageError('--until must be an ISO 8601 time');
    scope.until = until;
  }

  const receiptPaths = (values['webhook-receipts'] ?? '').split(',').filter((p) => p !== '');
  if (values['webhook-receipts'] !== undefined && receiptPaths.length === 0)
    throw new UsageError('--webhook-receipts needs a file');

  const config = loadConfig();
  const logger = createLogger({ ...config, LOG_LEVEL: 'warn' });
  // An audit reads every payment, event and delivery of the run: a statement may take longer
  // than a request's bound on a busy database (CI's HA chaos run: 10 s), but not forever.
  const pool = createPool(
    {
      ...config,
      DATABASE_POOL_MAX: 2,
      DATABASE_STATEMENT_TIMEOUT_MS: Math.max(config.DATABASE_STATEMENT_TIMEOUT_MS, 120_000),
      DATABASE_QUERY_TIMEOUT_MS: Math.max(config.DATABASE_QUERY_TIMEOUT_MS, 130_000),
    },
    logger,
    'verify',
  );
  const kafka = values['no-kafka'] ? null : createKafka(config, logger);
  const admin = kafka?.admin() ?? null;
  try {
    if (wait > 0) {
      const drain = await waitForDrain(pool, scope, wait, webhookGraceSeconds);
      process.stderr.write(
        drain.drained
          ? `verify: pipeline drained after ${drain.waitedSeconds} s\n`
          : `verify: still ${drain.unsettled} unsettled payments, ${drain.unpublished} unpublished outbox rows, ${drain.undelivered} pending webhook deliveries and ${drain.unsentLetters} unsent dead letters after ${wait} s\n`,
      );
    }
    await admin?.connect();
    const report = await verifyPayments(
      {
        db: pool,
        ...(kafka && admin
          ? {
              kafka: {
                client: kafka,
                admin,
                paymentsTopic: config.KAFKA_TOPIC_PAYMENTS,
                dlqTopic: config.KAFKA_TOPIC_DLQ,
              },
            }
          : {}),
      },
      {
        scope,
        graceSeconds,
        keyTtlSeconds: config.IDEMPOTENCY_KEY_TTL_SECONDS,
        ...(receiptPaths.length > 0
          ? { webhookReceipts: () => readReceiptsFiles(receiptPaths) }
          : {}),
        webhookRetentionSeconds: config.WEBHOOK_EVENT_RETENTION_SECONDS,
        webhookGraceSeconds,
      },
    );
    process.stdout.write(
      values.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`,
    );
    return report.violations.length === 0 ? 0 : 1;
  } finally {
    await admin?.disconnect();
    await pool.end();
  }
}

function seconds(option: string, value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`${option} must be a number of seconds`);
  return Number(value);
}

// Not runCli: "could not verify" (2) must not read as "violations found" (1).
try {
  process.exitCode = await main();
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof UsageError) process.stderr.write(`${message}\n${USAGE}\n`);
  else if (error instanceof ConfigError) process.stderr.write(`${message}\n`);
  else process.stderr.write(`verify failed: ${message}\n`);
  process.exitCode = 2;
}
