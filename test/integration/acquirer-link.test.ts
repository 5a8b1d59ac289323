import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquirerTransientError } from '../../src/acquirer/acquirer.js';
import { createHttpAcquirer } from '../../src/acquirer/http-acquirer.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { loginUrl, startDeployedFleet, type DeployedFleet } from '../support/deployed-fleet.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { REPO_ROOT } from '../support/services.js';
import { eventually, FAST_SETTLEMENT, settlementFacts } from '../support/settlement-harness.js';

/**
 * Issue 38 item 8, DESIGN 121: the acquirer role requires settlement's bearer token
 * (ACQUIRER_TOKEN). Without it, or with a wrong one, it answers 401 and charges nothing, logging
 * once per burst; settlement reads the 401 as a configuration fault (not sent): the payment
 * waits in `processing`, spending no attempt, never dead-lettered, and settles once settlement
 * runs with the right token. TLS is configuration: a self-signed certificate made here.
 */

const WAIT_MS = 90_000;
const WRONG_TOKEN = 'not-the-acquirer-token-0123456789';
const REFUSAL_LINE =
  'acquirer refused a call without the right bearer token (401): check ACQUIRER_TOKEN on both sides';

let db: TestDatabase;
let fleet: DeployedFleet;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // As deployed with the acquirer process: settlement's login loses the books.
  await db.pool.query('CALL acquirer_books_own_login()');
  fleet = await startDeployedFleet(db, ['acquirer', 'api', 'relay', 'settlement'], {
    // One refusal line for the whole file: the burst is counted, not logged per call.
    acquirer: { OUTAGE_LOG_INTERVAL_MS: '600000' },
    // A wrong token, and an attempt guard that a counted 401 would exhaust at once.
    settlement: { ACQUIRER_TOKEN: WRONG_TOKEN, SETTLEMENT_MAX_ATTEMPTS: '2' },
  });
  apiKey = (await createMerchant(db.pool, 'Acquirer link merchant')).apiKey;
}, 180_000);

afterAll(async () => {
  await fleet.stop();
  await db.drop();
});

async function charges(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM acquirer_simulator_charges',
  );
  return rows[0]?.n ?? -1;
}

async function deadLetters(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM dead_letters',
  );
  return rows[0]?.n ?? -1;
}

function refusalLines(proc: RoleProcess | undefined): Record<string, unknown>[] {
  return (proc?.output() ?? '')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === REFUSAL_LINE);
}

describe('the acquirer link authenticated', () => {
  it('when a charge comes without the token or with a wrong one, then 401 and nothing is charged; the probes need none', async () => {
    const body = JSON.stringify({
      paymentId: randomUUID(),
      amount: 1000,
      currency: 'EUR',
      source: 'tok_visa',
    });
    const headers = {
      'content-type': 'application/json',
      'idempotency-key': `charge_${randomUUID()}`,
    };
    for (const authorization of [undefined, `Bearer ${WRONG_TOKEN}`, 'Basic dXNlcjpwYXNz']) {
      const res = await fetch(`${fleet.acquirerUrl}/charges`, {
        method: 'POST',
        headers: authorization === undefined ? headers : { ...headers, authorization },
        body,
      });
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
    const inquiry = await fetch(`${fleet.acquirerUrl}/charges/charge_${randomUUID()}`);
    expect(inquiry.status).toBe(401);
    expect(await charges()).toBe(0);
    expect((await fetch(`${fleet.acquirerUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${fleet.acquirerUrl}/readyz`)).status).toBe(200);
    // And with the token, the same call is served.
    const served = await fetch(`${fleet.acquirerUrl}/charges`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${fleet.env.ACQUIRER_TOKEN ?? ''}` },
      body,
    });
    expect(served.status).toBe(200);
    expect(await charges()).toBe(1);
  });

  it('when settlement has a wrong token, then the payment waits in processing (no attempt, no dead letter) and settles once settlement has the right one', async () => {
    const chargedBefore = await charges();
    const res = await fetch(`${fleet.apiUrl}/payments`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({ amount: 1000, currency: 'EUR', source: 'tok_visa' }),
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as { id: string }).id;
    // More refusals than SETTLEMENT_MAX_ATTEMPTS: counted, they would have dead-lettered it.
    const waiting = await eventually(
      'refused calls',
      async () => {
        const { rows } = await db.pool.query<{
          state: string;
          attempts: number;
          not_sent: number;
          last_error_class: string | null;
        }>(
          `SELECT state, attempts, not_sent, last_error_class FROM settlement_jobs
            WHERE payment_id = $1`,
          [id],
        );
        return rows[0] && rows[0].not_sent >= 4 ? rows[0] : undefined;
      },
      WAIT_MS,
    );
    expect(waiting).toMatchObject({
      state: 'pending',
      attempts: 0,
      last_error_class: 'acquirer_unauthorized',
    });
    expect(await settlementFacts(db, id)).toMatchObject({ status: 'processing', calls: 0 });
    expect(await charges()).toBe(chargedBefore);
    expect(await deadLetters()).toBe(0);
    // One line for every refusal of the burst (the first test's included).
    expect(refusalLines(fleet.processes.get('acquirer'))).toHaveLength(1);

    // The fix: settlement restarted with the acquirer's token.
    expect(await fleet.processes.get('settlement')?.stop()).toBe(0);
    const settlement = startRoleProcess('apps/settlement/main.js', {
      ...fleet.env,
      ...FAST_SETTLEMENT,
      ACQUIRER_URL: fleet.acquirerUrl,
      DATABASE_URL: loginUrl(db.url, 'settlement'),
    });
    fleet.processes.set('settlement', settlement);
    const done = await eventually(
      `payment ${id} settled`,
      async () => {
        const facts = await settlementFacts(db, id);
        return facts.status === 'processing' ? undefined : facts;
      },
      WAIT_MS,
    );
    expect(done).toMatchObject({ status: 'settled', charges: 1, approved_charges: 1 });
    expect(await deadLetters()).toBe(0);
  });
});

/** openssl, when the machine has it: node:crypto cannot make an X.509 certificate. */
function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!hasOpenssl())('the acquirer link over TLS', () => {
  it('when the acquirer role serves a self-signed certificate, then a client trusting it (ACQUIRER_CA_FILE) charges; one that does not, or plain HTTP, never reaches it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'acquirer-tls-'));
    const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1'],
        ...['-keyout', key, '-out', cert, '-subj', '/CN=127.0.0.1'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { stdio: 'ignore' },
    );
    const token = fleet.env.ACQUIRER_TOKEN ?? '';
    const proc = startRoleProcess('apps/acquirer/main.js', {
      ...fleet.env,
      ACQUIRER_PORT: '0',
      ACQUIRER_TLS_CERT_FILE: cert,
      ACQUIRER_TLS_KEY_FILE: key,
      DATABASE_URL: loginUrl(db.url, 'acquirer'),
    });
    try {
      const ready = await proc.logLine('acquirer ready');
      expect(ready).toMatchObject({ tls: true, token: true });
      const url = `https://127.0.0.1:${String(ready.port)}`;
      const request = () => ({
        idempotencyKey: `charge_${randomUUID()}`,
        paymentId: randomUUID(),
        amount: 500,
        currency: 'EUR',
        source: 'tok_visa',
      });
      const signal = () => AbortSignal.timeout(10_000);
      const ca = readFileSync(cert, 'utf8');

      const trusted = createHttpAcquirer(url, { token, ca });
      await expect(trusted.charge(request(), signal())).resolves.toMatchObject({
        outcome: 'approved',
      });
      const untrusted = createHttpAcquirer(url, { token });
      await expect(untrusted.charge(request(), signal())).rejects.toBeInstanceOf(
        AcquirerTransientError,
      );
      const wrongToken = createHttpAcquirer(url, { token: WRONG_TOKEN, ca });
      await expect(wrongToken.charge(request(), signal())).rejects.toMatchObject({
        errorClass: 'acquirer_unauthorized',
        delivery: 'not_sent',
      });
      const plain = createHttpAcquirer(url.replace('https:', 'http:'), { token });
      await expect(plain.charge(request(), signal())).rejects.toBeInstanceOf(
        AcquirerTransientError,
      );
    } finally {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('production without a token', () => {
  // Real-looking credentials (production refuses the development ones first); never reached.
  const production = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    DATABASE_URL: 'postgres://svc:s3cret@127.0.0.1:1/payments',
    REDIS_URL: 'redis://:s3cret@127.0.0.1:1',
  };
  const run = (entry: string, env: Record<string, string>) =>
    spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', entry)], {
      env: { ...production, ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });

  it.each([
    ['apps/acquirer/main.js', {}, 'must be set for the acquirer role with NODE_ENV=production'],
    [
      'apps/settlement/main.js',
      { ACQUIRER_URL: 'https://acquirer:3100' },
      'must be set for settlement with ACQUIRER_URL with NODE_ENV=production',
    ],
    [
      'apps/acquirer/main.js',
      { ACQUIRER_TOKEN: 'dev-acquirer-token-not-secret' },
      'is the built-in development token, refused with NODE_ENV=production',
    ],
  ])(
    'when %s starts with %j, then it exits 1 with one line naming ACQUIRER_TOKEN',
    (entry, env, line) => {
      const result = run(entry, env);
      expect(result.status, result.stderr).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`invalid configuration: ACQUIRER_TOKEN ${line}\n`);
    },
  );
});
