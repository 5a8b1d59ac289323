import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import type { ReceiptLine } from '../../tools/webhooks/webhook-receipt.js';
import { startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { REPO_ROOT } from '../support/services.js';

/**
 * `k6/run.sh storm` with WEBHOOKS=1 and VERIFY=1 against the product as deployed (the webhooks
 * role included): the script starts a receiver per mode (one answering, one failing for a while),
 * each creates an endpoint per merchant, and `npm run verify` judges the run with their receipts.
 * Skipped without k6 (as k6-smoke.test.ts).
 */

const KEYS = 60;
const COPIES = 4;

function findK6(): string | null {
  const candidates = [process.env.K6, path.join(REPO_ROOT, '.stack/bin/k6')];
  for (const candidate of candidates) if (candidate && existsSync(candidate)) return candidate;
  try {
    return execFileSync('sh', ['-c', 'command -v k6'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}
const k6 = findK6();

describe.runIf(k6 !== null || Boolean(process.env.CI))('k6 storm with webhooks', () => {
  let db: TestDatabase;
  let fleet: DeployedFleet;
  const runId = `k6-whstorm-${uniqueSuffix()}`;
  const receipts = [1, 2].map((n) =>
    path.join(REPO_ROOT, 'reports', `webhooks-${runId.slice(3)}-${n}.jsonl`),
  );

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
    for (const file of [...receipts, ...receipts.map((r) => `${r}.log`)])
      await rm(file, { force: true });
    await rm(path.join(REPO_ROOT, 'reports', `k6-${runId.slice(3)}.json`), { force: true });
  });

  it(
    `when ${KEYS} keys are each fired ${COPIES} times with an answering and a failing receiver, then run.sh's verify passes on their receipts and each settled payment reached both once identified`,
    { timeout: 400_000 },
    async () => {
      await defineTier(db.pool, BENCH_TIER);
      const merchants = [
        await createMerchant(db.pool, 'storm a', BENCH_TIER.name),
        await createMerchant(db.pool, 'storm b', BENCH_TIER.name),
      ];
      const run = await promisify(execFile)('bash', [path.join(REPO_ROOT, 'k6/run.sh'), 'storm'], {
        cwd: REPO_ROOT,
        env: {
          ...fleet.env,
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          K6: k6 ?? 'k6',
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
          WEBHOOKS: '1',
          WEBHOOK_RECEIVER_MODES: 'ok,fail-for:8',
          VERIFY: '1',
          VERIFY_WAIT: '120',
        },
        timeout: 380_000,
        maxBuffer: 16 * 1024 * 1024,
      }).then(
        (done) => ({ code: 0, output: `${done.stdout}${done.stderr}` }),
        (error: unknown) => {
          const failed = error as { code?: number; stdout?: string; stderr?: string };
          return {
            code: failed.code ?? -1,
            output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
          };
        },
      );
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain('violations    none');
      expect(run.output).toMatch(
        new RegExp(`${KEYS * 2} deliveries: ${KEYS * 2} delivered, 0 failed, 0 pending`),
      );

      for (const [index, file] of receipts.entries()) {
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
        if (index === 1) expect(refused.length).toBeGreaterThan(0);
      }
    },
  );
});
