import { describe, expect, it } from 'vitest';
import { INSERT_PAYMENT_ONCE_SQL } from '../../src/payments/payment-insert-single.js';
import {
  paymentPgbenchDefines,
  paymentPgbenchScript,
  pgbenchScript,
} from '../../tools/bench/pgbench-script.js';

describe('the pgbench script of bench:api', () => {
  it('when generated, then it holds the service statement itself, each placeholder filled', () => {
    const script = paymentPgbenchScript();
    expect(script).not.toMatch(/\$\d/);
    // Every piece of the service's statement between two placeholders, in order.
    let from = 0;
    for (const piece of INSERT_PAYMENT_ONCE_SQL.split(/\$\d+/)) {
      const at = script.indexOf(piece, from);
      expect(at, `missing: ${piece}`).toBeGreaterThanOrEqual(from);
      from = at + piece.length;
    }
    expect(script).toContain('INSERT INTO idempotency_keys');
    expect(script.trimEnd().endsWith(';')).toBe(true);
  });

  it('when generated, then every pgbench variable it reads is set by \\set or -D', () => {
    const script = paymentPgbenchScript();
    const defined = new Set(
      paymentPgbenchDefines('m', '{}')
        .filter((arg) => arg !== '-D')
        .map((arg) => arg.slice(0, arg.indexOf('='))),
    );
    for (const [, name] of script.matchAll(/\\set (\w+)/g)) defined.add(name ?? '');
    // `::type` casts are not variables.
    const read = [...script.matchAll(/(?<!:):([a-z_]+)/g)].map(([, name]) => name ?? '');
    expect(read.length).toBeGreaterThan(0);
    for (const name of read) expect(defined, name).toContain(name);
  });

  it('when the statement has a placeholder without a value, or a value without a placeholder, then it throws', () => {
    expect(() => pgbenchScript('SELECT $1, $2', { 1: ':a' })).toThrow('$2');
    expect(() => pgbenchScript('SELECT $1', { 1: ':a', 2: ':b' })).toThrow('$2');
    expect(pgbenchScript('SELECT $1, $10', { 1: ':a', 10: ':b' })).toBe('SELECT :a, :b;\n');
  });
});
