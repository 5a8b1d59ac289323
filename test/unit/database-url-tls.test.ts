import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import { roleDatabaseUrl } from '../../tools/support/role-database-url.js';
import { databaseUrlWithName } from '../../tools/support/scratch-database.js';

/**
 * The HA topology's URLs carry TLS in their query string (DESIGN 124:
 * `?sslmode=verify-full&sslrootcert=<ca.pem>`): the config accepts them, and the tools that
 * build other databases' or logins' URLs from DATABASE_URL keep it.
 */
const QUERY = 'sslmode=verify-full&sslrootcert=/tmp/stack/ha/tls/ca.pem';
const OWNER = `postgres://payments:payments@127.0.0.1:7432/payments?${QUERY}`;

describe('database URLs with verify-full TLS (DESIGN 124)', () => {
  it('when a database or login is swapped in, then the TLS parameters stay', () => {
    expect(databaseUrlWithName(OWNER, 'scratch_1')).toBe(
      `postgres://payments:payments@127.0.0.1:7432/scratch_1?${QUERY}`,
    );
    expect(roleDatabaseUrl(OWNER, 'api', {})).toBe(
      `postgres://payments_api:payments_api@127.0.0.1:7432/payments?${QUERY}`,
    );
  });

  it('when the config reads such a URL, then it is accepted as is and node-postgres reads both parameters', () => {
    const config = loadConfig({ DATABASE_URL: OWNER }, () => '');
    expect(config.DATABASE_URL).toBe(OWNER);
    // node-postgres (pg-connection-string) reads the CA file into ssl.ca; verify-full keeps
    // Node's default certificate and host name checks (no rejectUnauthorized: false). The parsed
    // parameters are not in pg's types, hence the cast.
    const ca = path.join(mkdtempSync(path.join(tmpdir(), 'ca-')), 'ca.pem');
    writeFileSync(ca, 'the CA certificate');
    const client = new pg.Client(config.DATABASE_URL.replace('/tmp/stack/ha/tls/ca.pem', ca));
    const parsed = client as unknown as { connectionParameters: { ssl: unknown } };
    expect(parsed.connectionParameters.ssl).toEqual({ ca: 'the CA certificate' });
  });
});
