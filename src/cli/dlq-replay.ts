import { parseArgs } from 'node:util';
import { loadConfig } from '../platform/config.js';
import { createKafka } from '../platform/kafka.js';
import { createLogger } from '../platform/logger.js';
import { replayDeadLetters } from '../settlement/replay-dead-letters.js';
import { runCli, UsageError } from './run-cli.js';

const USAGE = 'usage: dlq:replay -- --event-id <uuid> | --all';

/**
 * `npm run dlq:replay -- --event-id <id>` or `-- --all`: puts dead letters back on the payments
 * topic with their original event id and prints one JSON line with what was replayed.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { 'event-id': { type: 'string' }, all: { type: 'boolean' } },
    strict: true,
  });
  const eventId = values['event-id'];
  if ((eventId === undefined) === (values.all !== true)) throw new UsageError(USAGE);
  if (eventId !== undefined && !/^[0-9a-f-]{36}$/i.test(eventId)) throw new UsageError(USAGE);
  const config = loadConfig();
  const logger = createLogger({ ...config, LOG_LEVEL: 'warn' });
  const kafka = createKafka(config, logger);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const result = await replayDeadLetters(
      kafka,
      admin,
      {
        dlqTopic: config.KAFKA_TOPIC_DLQ,
        mainTopic: config.KAFKA_TOPIC_PAYMENTS,
        select: eventId === undefined ? { all: true } : { eventId },
      },
      logger,
    );
    process.stdout.write(`${JSON.stringify(result)}\n`);
    if (eventId !== undefined && result.replayed.length === 0) {
      process.stderr.write(`no dead letter with event id ${eventId}\n`);
      process.exitCode = 2;
    }
  } finally {
    await admin.disconnect();
  }
}

await runCli('dlq:replay', USAGE, main);
