import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPTURE_RACE_INVARIANTS } from '../../k6/scenarios/capture-race.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { withFakeApi } from '../support/fake-api.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { runLoadCli, type LoadSummary } from '../support/load-cli.js';
import type { TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';

/**
 * The capture-vs-cancel race (issue 40) on the project's own driver (`npm run load --
 * capture-race`, the real CLI as a process) against the real API, relay, settlement and the
 * acquirer role's hold books: every payment's race has one winner, the rest refused with its
 * code, replays identical; then the database and the acquirer's books say the same.
 */

const PAYMENTS = 6;
const CAPTURES = 4;
const CANCELS = 4;
const COPIES = 3;

const INVARIANTS = [...CAPTURE_RACE_INVARIANTS, 'server_errors', 'unresolved_requests'];

describe('npm run load -- capture-race (the driver, no k6)', () => {
  let db: TestDatabase;
  let api: TestApi;
  let workDir: string;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(tmpdir(), 'load-capture-race-'));
    db = await createTestDatabase();
    api = await startTestPipeline(db);
  });
  afterAll(async () => {
    await api.close();
    await db.drop();
    await rm(workDir, { recursive: true, force: true });
  });

  it(
    `when ${String(CAPTURES)} captures and ${String(CANCELS)} cancels race on each of ${String(PAYMENTS)} authorizations (each key sent ${String(COPIES)} times), then one wins each, the rest are refused, and the books agree`,
    { timeout: 240_000 },
    async () => {
      // The race, not the rate limit, is tested: the widest tier.
      await defineTier(db.pool, BENCH_TIER);
      const merchants = [
        await api.merchant('race a', BENCH_TIER.name),
        await api.merchant('race b', BENCH_TIER.name),
      ];
      const summaryFile = path.join(workDir, 'summary.json');
      const run = await runLoadCli(
        ['capture-race', '--summary', summaryFile],
        {
          BASE_URL: api.url(''),
          API_KEYS: merchants.map((merchant) => merchant.apiKey).join(','),
          RUN_ID: `capture-race-${uniqueSuffix()}`,
          PAYMENTS: String(PAYMENTS),
          CAPTURES: String(CAPTURES),
          CANCELS: String(CANCELS),
          COPIES: String(COPIES),
          VUS: '2',
          MAX_DURATION: '150s',
          SETTLE_WAIT_S: '60',
          // Correctness is what this test is about, on a busy machine: no latency objective.
          P95_MS: '30000',
          P99_MS: '60000',
        },
        200_000,
      );
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain('PASSED');

      const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as LoadSummary;
      const { counters } = summary;
      expect(summary.passed).toBe(true);
      for (const name of INVARIANTS) expect(counters[name], name).toBe(0);
      expect(counters.capture_race_payments).toBe(PAYMENTS);
      // Races happened: one winner per payment, every other key's copies refused.
      expect(
        (counters.capture_race_capture_wins ?? 0) + (counters.capture_race_cancel_wins ?? 0),
      ).toBe(PAYMENTS);
      expect(counters.capture_race_refusals).toBe(PAYMENTS * (CAPTURES + CANCELS - 1) * COPIES);
      expect(summary.latencyMs['POST /payments/{id}/capture']?.count).toBeGreaterThanOrEqual(
        PAYMENTS * CAPTURES * COPIES,
      );
      expect(summary.latencyMs['POST /payments/{id}/cancel']?.count).toBeGreaterThanOrEqual(
        PAYMENTS * CANCELS * COPIES,
      );

      // One decision per payment, the payment and the acquirer's hold as it says.
      const { rows } = await db.pool.query<{
        status: string;
        amount: string;
        amount_captured: string | null;
        cancellation_reason: string | null;
        action: string;
        decided_amount: string | null;
        decided_reason: string | null;
        held: string;
        captured: string;
        released: string;
      }>(
        `SELECT p.status, p.amount, p.amount_captured, p.cancellation_reason, d.action,
                d.amount AS decided_amount, d.cancellation_reason AS decided_reason,
                h.amount_authorized AS held, h.amount_captured AS captured,
                h.amount_released AS released
           FROM payments p
           JOIN payment_hold_decisions d ON d.payment_id = p.id
           JOIN acquirer_simulator_holds h ON h.payment_id = p.id
          WHERE p.merchant_id = ANY($1::uuid[])`,
        [merchants.map((merchant) => merchant.id)],
      );
      expect(rows).toHaveLength(PAYMENTS);
      expect(rows.filter((row) => row.action === 'capture')).toHaveLength(
        counters.capture_race_capture_wins ?? -1,
      );
      for (const row of rows) {
        expect(row.held).toBe(row.amount);
        if (row.action === 'capture') {
          expect(row).toMatchObject({ status: 'settled', amount_captured: row.decided_amount });
          expect(Number(row.captured)).toBe(Number(row.decided_amount));
          expect(Number(row.released)).toBe(Number(row.amount) - Number(row.decided_amount));
        } else {
          expect(row).toMatchObject({
            status: 'canceled',
            cancellation_reason: row.decided_reason,
          });
          expect([Number(row.captured), Number(row.released)]).toEqual([0, Number(row.amount)]);
        }
      }
    },
  );

  it('when the API lets every capture and cancel win, then the driver says so and exits 1 (a race against a fake that decides twice)', async () => {
    // A stand-in that authorizes at once and answers every capture and cancel 202 with a new
    // body: the invariants must fail the run, not only be counted.
    let answered = 0;
    const run = await withFakeApi(
      (req) => {
        answered++;
        return req.method === 'GET'
          ? { status: 200, body: { id: 'p1', status: 'requires_capture' } }
          : { status: 202, body: { id: 'p1', status: 'requires_capture', answer: answered } };
      },
      (baseUrl) =>
        runLoadCli(
          ['capture-race', '--summary', path.join(workDir, 'fake-summary.json')],
          {
            BASE_URL: baseUrl,
            API_KEYS: 'sk_test_fake',
            PAYMENTS: '2',
            CAPTURES: '2',
            CANCELS: '2',
            COPIES: '2',
            VUS: '1',
            SETTLE_WAIT_S: '1',
          },
          60_000,
        ),
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/BROKEN capture_race_two_winners count==0 \(2\)/);
    expect(run.output).toMatch(/BROKEN capture_race_replay_mismatch count==0 \(8\)/);
  });
});
