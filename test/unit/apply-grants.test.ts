import { describe, expect, it } from 'vitest';
import { loginGrantStatements } from '../../src/platform/database/apply-grants.js';
import { SERVICE_GRANTS } from '../../src/platform/database/service-grants.js';

describe('loginGrantStatements (src/platform/database/apply-grants.ts)', () => {
  const settlement = SERVICE_GRANTS.find((entry) => entry.login === 'payments_settlement');
  if (!settlement) throw new Error('no settlement entry');

  it('when a login is granted, then everything is revoked first and UPDATE is per column', () => {
    const statements = loginGrantStatements(settlement, { schema: 'public', booksOwnLogin: false });
    expect(statements.slice(0, 5)).toEqual([
      'REVOKE ALL ON ALL TABLES IN SCHEMA "public" FROM "payments_settlement"',
      'REVOKE ALL ON ALL SEQUENCES IN SCHEMA "public" FROM "payments_settlement"',
      'REVOKE ALL ON ALL ROUTINES IN SCHEMA "public" FROM "payments_settlement"',
      'REVOKE ALL ON SCHEMA "public" FROM "payments_settlement"',
      'GRANT USAGE ON SCHEMA "public" TO "payments_settlement"',
    ]);
    expect(statements).toContain(
      'GRANT UPDATE ("status", "failure_code", "updated_at") ON "public"."refunds" TO "payments_settlement"',
    );
    expect(statements.join('\n')).toContain('acquirer_simulator_charges');
  });

  it("when the books are the acquirer login's (0026), then settlement's grants on them are left out", () => {
    const statements = loginGrantStatements(settlement, { schema: 'public', booksOwnLogin: true });
    expect(statements.join('\n')).not.toContain('acquirer_simulator');
  });

  it('when the list is read, then no login names a table twice for the same privilege', () => {
    for (const entry of SERVICE_GRANTS) {
      const seen = entry.grants.flatMap((grant) =>
        grant.tables.flatMap((table) => grant.privileges.map((p) => `${table} ${p}`)),
      );
      expect(seen, entry.login).toEqual([...new Set(seen)]);
    }
  });
});
