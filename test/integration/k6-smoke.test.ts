import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import type { VerifyReport } from '../../tools/verify/verify-payments.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { REPO_ROOT } from '../support/services.js';
import type { TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { runVerifyCli } from '../support/verify-cli.js';

/**
 * A short duplicate-charge storm (k6/storm.js, the real k6) against the real API, relay and
 * settlement, then the real `npm run verify` on what it left: the same path as docs/development.md's
 * storm, at a size fit for the suite. Without k6 it is skipped, except in CI (CI set), where
 * .ci/run installs k6 first and its absence is a failure.
 */

const KEYS = 300;
const COPIES = 10;

/** $K6, the project's own build (scripts/install-k6.sh), or k6 on PATH. */
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
const inCi = Boolean(process.env.CI);
if (!k6 && !inCi) {
  process.stderr.write(
    'k6-smoke: skipped, k6 is not installed (npm run k6:install builds it into .stack/bin)\n',
  );
}

describe.runIf(k6 !== null || inCi)('k6 duplicate-charge storm (smoke)', () => {
  let db: TestDatabase;
  let api: TestApi;
  let workDir: string;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'k6-smoke-'));
    db = await createTestDatabase();
    api = await startTestPipeline(db);
  });
  afterAll(async () => {
    await api.close();
    await db.drop();
    await rm(workDir, { recursive: true, force: true });
  });

  it(
    `when ${KEYS} keys are each fired ${COPIES} times at once, then k6's invariants hold and verify finds one settled payment per key`,
    { timeout: 240_000 },
    async () => {
      expect(
        k6,
        'CI is set but k6 is not installed: .ci/run must run scripts/install-k6.sh',
      ).not.toBeNull();
      // A storm measures idempotency, not the rate limit: the widest tier.
      await defineTier(db.pool, BENCH_TIER);
      const merchants = [
        await api.merchant('smoke a', BENCH_TIER.name),
        await api.merchant('smoke b', BENCH_TIER.name),
      ];
      const runId = `smoke-${uniqueSuffix()}`;
      const summaryFile = path.join(workDir, 'summary.json');
      const k6Run = await promisify(execFile)(
        k6 ?? 'k6',
        [
          'run',
          '--no-usage-report',
          '--address',
          '',
          '--quiet',
          '--summary-export',
          summaryFile,
          path.join(REPO_ROOT, 'k6/storm.js'),
        ],
        {
          env: {
            PATH: process.env.PATH ?? '',
            HOME: workDir,
            BASE_URL: api.url(''),
            API_KEYS: merchants.map((merchant) => merchant.apiKey).join(','),
            RUN_ID: runId,
            KEYS: String(KEYS),
            COPIES: String(COPIES),
            VUS: '4',
            MAX_DURATION: '120s',
            // Correctness is what this test is about; the latency objectives are the
            // benchmark's, on an otherwise idle machine, not the suite's on a busy one.
            P95_MS: '5000',
            P99_MS: '10000',
          },
          timeout: 180_000,
          maxBuffer: 16 * 1024 * 1024,
        },
      ).then(
        () => ({ code: 0, output: '' }),
        (error: unknown) => {
          const failed = error as { code?: number; stdout?: string; stderr?: string };
          return {
            code: failed.code ?? -1,
            output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
          };
        },
      );
      expect(k6Run.code, k6Run.output).toBe(0);

      const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as {
        metrics: Record<string, { count?: number }>;
      };
      const count = (metric: string) => summary.metrics[metric]?.count ?? 0;
      expect(count('storm_keys')).toBe(KEYS);
      expect(count('http_reqs')).toBeGreaterThanOrEqual(KEYS * COPIES);
      expect(count('server_errors')).toBe(0);
      expect(count('storm_id_mismatch')).toBe(0);

      const verify = await runVerifyCli(db, api.platform.config, [
        '--wait',
        '90',
        '--grace',
        '0',
        '--key-prefix',
        runId,
        '--json',
      ]);
      expect(verify.stderr).toContain('pipeline drained');
      expect(verify.code).toBe(0);
      const report = JSON.parse(verify.stdout) as VerifyReport;
      expect(report.violations).toEqual([]);
      expect(report.payments).toMatchObject({ total: KEYS, settled: KEYS, inFlight: 0 });
      expect(report.keys).toBe(KEYS);
      expect(report.acquirer.approved).toBe(KEYS);
      expect(report.events?.distinct).toBe(2 * KEYS);
    },
  );
});
