import { parseArgs } from 'node:util';
import { loadConfig } from '../platform/config/config.js';
import { createKafka } from '../platform/kafka/kafka.js';
import { createLogger } from '../platform/telemetry/logger.js';
import {
  listUnreadableDeadLetters,
  replayDeadLetters,
} from '../jobs/dead-letters/replay-dead-letters.js';
import { runCli, UsageError, withPool } from './run-cli.js';

const USAGE = 'usage: dlq:replay -- --event-id <uuid> | --all | --list';

/**
 * `npm run dlq:replay -- --event-id <id>` or `-- --all`: puts dead letters back on the payments
 * topic with their original event id and prints one JSON line with what was replayed. Letters
 * are read from the dead-letter topic and from `dead_letters` (DATABASE_URL), which keeps every
 * dead job's letter while the job is dead, after the topic's retention dropped it (DESIGN 111).
 * `-- --list` replays nothing: it prints one JSON line per dead letter without an event id
 * (partition, offset, error, headers, the raw value in base64 and as text when it is UTF-8).
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'event-id': { type: 'string' },
      all: { type: 'boolean' },
      list: { type: 'boolean' },
    },
    strict: true,
  });
  const eventId = values['event-id'];
  const chosen = [eventId !== undefined, values.all === true, values.list === true];
  if (chosen.filter(Boolean).length !== 1) throw new UsageError(USAGE);
  if (eventId !== undefined && !/^[0-9a-f-]{36}$/i.test(eventId)) throw new UsageError(USAGE);
  const config = loadConfig();
  const logger = createLogger({ ...config, LOG_LEVEL: 'warn' });
  const kafka = createKafka(config, logger);
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (values.list === true) {
      const letters = await listUnreadableDeadLetters(kafka, admin, config.KAFKA_TOPIC_DLQ);
      for (const letter of letters) process.stdout.write(`${JSON.stringify(letter)}\n`);
      return;
    }
    const result = await withPool('dlq-replay', (database) =>
      replayDeadLetters(
        kafka,
        admin,
        {
          dlqTopic: config.KAFKA_TOPIC_DLQ,
          mainTopic: config.KAFKA_TOPIC_PAYMENTS,
          select: eventId === undefined ? { all: true } : { eventId },
          database,
        },
        logger,
      ),
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
