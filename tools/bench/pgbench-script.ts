import { INSERT_PAYMENT_ONCE_SQL } from '../../src/payments/payment-insert-single.js';

/** What pgbench runs in place of each `$n`: a pgbench variable (`:name`) or an SQL expression. */
export type PgbenchParameters = Readonly<Record<number, string>>;

/**
 * A pgbench script running `statement` as it is, each `$n` replaced by `parameters[n]`. Throws
 * when a placeholder has no replacement or a replacement no placeholder: the statement changed
 * and the bench must be told how to fill it, not run something else.
 */
export function pgbenchScript(
  statement: string,
  parameters: PgbenchParameters,
  preamble: readonly string[] = [],
): string {
  const used = new Set<number>();
  const text = statement.replace(/\$(\d+)/g, (_, digits: string) => {
    const n = Number(digits);
    const value = parameters[n];
    if (value === undefined) throw new Error(`no pgbench value for $${n}`);
    used.add(n);
    return value;
  });
  const unused = Object.keys(parameters).filter((n) => !used.has(Number(n)));
  if (unused.length > 0) throw new Error(`no $${unused.join(', $')} in the statement`);
  // pgbench reads a multi-line SQL command up to its semicolon.
  return [...preamble, `${text};`, ''].join('\n');
}

/**
 * How the pgbench reference of `npm run bench:api` fills the service's insert (insertPaymentOnce):
 * per transaction a fresh key, payment id and event id (SQL, pgbench has no UUIDs) and a random
 * amount; the rest is one value per run, given with -D (see paymentPgbenchDefines).
 */
const PAYMENT_PARAMETERS: PgbenchParameters = {
  1: ':merchant',
  2: 'gen_random_uuid()::text',
  3: ':fingerprint',
  4: 'gen_random_uuid()',
  5: ':status',
  6: ':body',
  7: 'now()',
  8: ':ttl',
  9: ':amount',
  10: ':currency',
  11: ':source',
  12: 'NULL',
  13: ':metadata',
  14: 'gen_random_uuid()',
  15: ':event_type',
  16: ':topic',
  17: ':data',
  // Trace context: NULL, as the service writes it with tracing off (the default).
  18: 'NULL',
  19: 'NULL',
};

/** The service's new-payment statement as a pgbench script. */
export function paymentPgbenchScript(): string {
  return pgbenchScript(INSERT_PAYMENT_ONCE_SQL, PAYMENT_PARAMETERS, [
    '\\set amount random(1, 99999999)',
  ]);
}

/** pgbench's -D arguments for paymentPgbenchScript, from one stored response of the run. */
export function paymentPgbenchDefines(merchantId: string, responseBody: string): string[] {
  const values: Record<string, string> = {
    merchant: merchantId,
    fingerprint: `\\x${'ab'.repeat(32)}`,
    status: '202',
    body: responseBody,
    ttl: '86400',
    currency: 'EUR',
    source: 'tok_visa',
    metadata: '{}',
    event_type: 'payment.created',
    topic: 'bench',
    data: responseBody,
  };
  return Object.entries(values).flatMap(([name, value]) => ['-D', `${name}=${value}`]);
}
