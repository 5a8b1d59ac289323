import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Config } from '../../src/platform/config/config.js';
import type { TestDatabase } from './isolation.js';
import { REPO_ROOT } from './services.js';

const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `npm run verify` entry point (dist-tools/tools/cli/verify.js) against a test file's
 * database and topics, and resolves with its exit code and output (never rejects on a non-zero
 * exit: that is what the tests look at). The verifier is an operator's tool that reads every
 * table: it logs in as the owner (`db.url`), as an operator runs it, not as a service role.
 */
export async function runVerifyCli(
  db: Pick<TestDatabase, 'url'>,
  config: Pick<Config, 'KAFKA_BROKERS' | 'KAFKA_TOPIC_PAYMENTS' | 'KAFKA_TOPIC_DLQ'>,
  args: readonly string[],
): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [path.join(REPO_ROOT, 'dist-tools/tools/cli/verify.js'), ...args],
      {
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: db.url,
          KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
          KAFKA_TOPIC_PAYMENTS: config.KAFKA_TOPIC_PAYMENTS,
          KAFKA_TOPIC_DLQ: config.KAFKA_TOPIC_DLQ,
        },
        timeout: 180_000,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      stdout: failed.stdout ?? '',
      stderr: failed.stderr ?? '',
    };
  }
}
