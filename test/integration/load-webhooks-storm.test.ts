import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import type { ReceiptLine } from '../../tools/webhooks/webhook-receipt.js';
import { startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { runLoadCli } from '../support/load-cli.js';
import { REPO_ROOT } from '../support/services.js';

/**
 * `npm run load -- webhooks-storm` against the product as deployed (every role its own process on
 * its own login, the webhooks role included): the driver starts a receiver per mode (one
 * answering, one failing for a while), each creates an endpoint per merchant, the storm runs,
 * and `npm run verify` judges the run with their receipts (VERIFY=1, set by webhooks-storm).
 */

const KEYS = 60;
const COPIES = 4;

describe('npm run load -- webhooks-storm', () => {
  let db: TestDatabase;
  let fleet: DeployedFleet;
  const runId = `load-whstorm-${uniqueSuffix()}`;
  const runDir = path.join(REPO_ROOT, 'reports', runId);

  beforeAll(async () => {
    db = await createTestDatabase();
    const loopback = { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' };
    fleet = await startDeployedFleet(db, ['api', 'relay', 'settlement', 'webhooks'], {
      api: loopback,
      webhooks: {
        ...loopback,
        WEBHOOK_RETRY_SCHEDULE: '500ms,1s,1s,2s,2s,2s,2s,2s',
        WEBHOOK_POLL_MS: '50',
        WEBHOOK_TIMEOUT_MS: '2000',
      },
    });
  }, 180_000);
  afterAll(async () => {
    await fleet.stop();
    await db.drop();
    await rm(runDir, { recursive: true, force: true });
  });

  it(
    `when ${KEYS} keys are each fired ${COPIES} times with an answering and a failing receiver, then verify passes on their receipts and each settled payment reached both once identified`,
    { timeout: 400_000 },
    async () => {
      await defineTier(db.pool, BENCH_TIER);
      const merchants = [
        await createMerchant(db.pool, 'storm a', BENCH_TIER.name),
        await createMerchant(db.pool, 'storm b', BENCH_TIER.name),
      ];
      const run = await runLoadCli(
        ['webhooks-storm'],
        {
          ...fleet.env,
          DATABASE_URL: db.url,
          BASE_URL: fleet.apiUrl,
          API_KEYS: merchants.map((merchant) => merchant.apiKey).join(','),
          RUN_ID: runId,
          KEYS: String(KEYS),
          COPIES: String(COPIES),
          VUS: '4',
          MAX_DURATION: '120s',
          P95_MS: '5000',
          P99_MS: '10000',
          WEBHOOK_RECEIVER_MODES: 'ok,fail-for:8',
          VERIFY_WAIT: '120',
        },
        380_000,
      );
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain('violations    none');
      expect(run.output).toMatch(
        new RegExp(`${KEYS * 2} deliveries: ${KEYS * 2} delivered, 0 failed, 0 pending`),
      );

      for (const n of [1, 2]) {
        const file = path.join(runDir, `webhooks-${n}.jsonl`);
        const lines = (await readFile(file, 'utf8'))
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as ReceiptLine);
        const ok = new Set(
          lines.flatMap((line) =>
            line.kind === 'receipt' && line.status === 200 ? [line.webhook_id] : [],
          ),
        );
        expect(ok.size, file).toBe(KEYS);
        const refused = lines.filter((line) => line.kind === 'receipt' && line.status === 500);
        if (n === 2) expect(refused.length).toBeGreaterThan(0);
      }
    },
  );
});
