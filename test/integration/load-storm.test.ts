import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { readRequestSamples } from '../../tools/load/request-samples.js';
import type { VerifyReport } from '../../tools/verify/verify-payments.js';
import { withFakeApi } from '../support/fake-api.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { runLoadCli, type LoadSummary } from '../support/load-cli.js';
import type { TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { runVerifyCli } from '../support/verify-cli.js';

/**
 * The duplicate-charge storm on the project's own driver (`npm run load -- storm`, the real CLI
 * as a process) against the real API, relay and settlement, then the real `npm run verify` on
 * what it left: the path docs/development.md gives, at a size fit for the suite. No k6 anywhere.
 */

const KEYS = 300;
const COPIES = 10;

describe('npm run load -- storm (the driver, no k6)', () => {
  let db: TestDatabase;
  let api: TestApi;
  let workDir: string;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'load-storm-'));
    db = await createTestDatabase();
    api = await startTestPipeline(db);
  });
  afterAll(async () => {
    await api.close();
    await db.drop();
    await rm(workDir, { recursive: true, force: true });
  });

  it(
    `when ${KEYS} keys are each fired ${COPIES} times at once, then the driver's invariants hold and verify finds one settled payment per key`,
    { timeout: 240_000 },
    async () => {
      // A storm measures idempotency, not the rate limit: the widest tier.
      await defineTier(db.pool, BENCH_TIER);
      const merchants = [
        await api.merchant('storm a', BENCH_TIER.name),
        await api.merchant('storm b', BENCH_TIER.name),
      ];
      const runId = `storm-${uniqueSuffix()}`;
      const summaryFile = path.join(workDir, 'summary.json');
      const samplesFile = path.join(workDir, 'samples.jsonl');
      const run = await runLoadCli(
        ['storm', '--summary', summaryFile, '--samples', samplesFile],
        {
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
        180_000,
      );
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain('PASSED');

      const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as LoadSummary;
      expect(summary.passed).toBe(true);
      expect(summary.counters.storm_keys).toBe(KEYS);
      expect(summary.counters.server_errors).toBe(0);
      expect(summary.counters.storm_created_twice).toBe(0);
      expect(summary.requests.total).toBeGreaterThanOrEqual(KEYS * COPIES);
      expect(summary.latencyMs['POST /payments']?.count).toBe(summary.requests.total);
      expect(summary.driver.cpuMs).toBeGreaterThan(0);
      const samples = await readRequestSamples(samplesFile);
      expect(samples).toHaveLength(summary.requests.total);
      // 202, or 409 while a copy's first request is in flight, which the client sent again.
      const statuses = samples.map((sample) => sample.status);
      expect(statuses.filter((status) => status !== 202 && status !== 409)).toEqual([]);
      expect(statuses.filter((status) => status === 409)).toHaveLength(
        summary.counters.retries ?? -1,
      );

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

  it('when the API answers a copy with a second payment, then the driver says so and exits 1 (a storm against a fake that is not idempotent)', async () => {
    // The same CLI against a stand-in that creates a payment for every request: the invariant
    // must fail the run, not only be counted.
    let n = 0;
    const run = await withFakeApi(
      () => {
        n++;
        return { status: 202, body: { id: `p${n}`, object: 'payment' } };
      },
      (baseUrl) =>
        runLoadCli(
          ['storm', '--summary', path.join(workDir, 'fake-summary.json')],
          {
            BASE_URL: baseUrl,
            API_KEYS: 'sk_test_fake',
            KEYS: '5',
            COPIES: '3',
            VUS: '1',
            P95_MS: '5000',
            P99_MS: '10000',
          },
          60_000,
        ),
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/BROKEN storm_created_twice count==0 \(5\)/);
    expect(run.output).toMatch(/BROKEN storm_id_mismatch count==0 \(5\)/);
  });
});
