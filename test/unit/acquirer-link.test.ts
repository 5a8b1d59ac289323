import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createTokenCheck } from '../../src/acquirer/acquirer-token.js';
import { failureOf } from '../../src/acquirer/http-acquirer.js';
import {
  checkAcquirerLink,
  DEVELOPMENT_ACQUIRER_TOKEN,
} from '../../src/platform/config/acquirer-link-settings.js';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';

/** The acquirer link's token and TLS settings (DESIGN 121). */

const TOKEN = 'a-long-enough-token-0123456789';
const noFiles = (path: string): string => {
  throw Object.assign(new Error(`no ${path}`), { code: 'ENOENT' });
};

function lineFor(run: () => void): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('ACQUIRER_TOKEN and the link check', () => {
  it('when the token is set or read from ACQUIRER_TOKEN_FILE, then it is the config', () => {
    expect(loadConfig({ ACQUIRER_TOKEN: TOKEN }).ACQUIRER_TOKEN).toBe(TOKEN);
    const fromFile = loadConfig(
      { ACQUIRER_TOKEN_FILE: '/run/secrets/acquirer' },
      () => `${TOKEN}\n`,
    );
    expect(fromFile.ACQUIRER_TOKEN).toBe(TOKEN);
  });

  it('when the token is too short or has a space, then one line names it without echoing it', () => {
    for (const token of ['short', 'has a space in the middle of it']) {
      const line = lineFor(() => loadConfig({ ACQUIRER_TOKEN: token }));
      expect(line).toContain('ACQUIRER_TOKEN must be 16-4096 visible ASCII characters');
      expect(line).not.toContain(token);
    }
  });

  it.each([
    [{ calls: true, serves: false }, { ACQUIRER_URL: 'http://acquirer:3100' }, 'settlement'],
    [{ calls: false, serves: true }, {}, 'the acquirer role'],
  ])(
    'when NODE_ENV=production and %j has no token, then one line names ACQUIRER_TOKEN',
    (roles, env, who) => {
      const config = loadConfig({ NODE_ENV: 'production', ...env, ...CREDENTIALS });
      const line = lineFor(() => {
        checkAcquirerLink(config, roles, noFiles);
      });
      expect(line).toContain('ACQUIRER_TOKEN must be set for');
      expect(line).toContain(who);
      expect(line).not.toContain('\n');
    },
  );

  it('when NODE_ENV=production and the token is the development one, then it is refused', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      ACQUIRER_TOKEN: DEVELOPMENT_ACQUIRER_TOKEN,
      ...CREDENTIALS,
    });
    const line = lineFor(() => {
      checkAcquirerLink(config, { calls: false, serves: true }, noFiles);
    });
    expect(line).toContain('ACQUIRER_TOKEN is the built-in development token');
  });

  it('when settlement runs the simulator in-process (no ACQUIRER_URL), then production needs no token', () => {
    const config = loadConfig({ NODE_ENV: 'production', ...CREDENTIALS });
    expect(() => {
      checkAcquirerLink(config, { calls: true, serves: false }, noFiles);
    }).not.toThrow();
  });

  it('when outside production, then no token is needed (development and tests)', () => {
    const config = loadConfig({ ACQUIRER_URL: 'http://acquirer:3100' });
    expect(() => {
      checkAcquirerLink(config, { calls: true, serves: true }, noFiles);
    }).not.toThrow();
  });

  it('when a TLS file cannot be read or only one of the pair is set, then one line names it', () => {
    const cert = loadConfig({ ACQUIRER_TLS_CERT_FILE: '/x/cert.pem' });
    expect(
      lineFor(() => {
        checkAcquirerLink(cert, { calls: false, serves: true }, noFiles);
      }),
    ).toContain('ACQUIRER_TLS_KEY_FILE must be set with the other');
    const both = loadConfig({ ACQUIRER_TLS_CERT_FILE: '/x/c', ACQUIRER_TLS_KEY_FILE: '/x/k' });
    expect(
      lineFor(() => {
        checkAcquirerLink(both, { calls: false, serves: true }, noFiles);
      }),
    ).toContain('ACQUIRER_TLS_CERT_FILE names a file that cannot be read (ENOENT: /x/c)');
    const ca = loadConfig({ ACQUIRER_URL: 'https://acquirer:3100', ACQUIRER_CA_FILE: '/x/ca' });
    expect(
      lineFor(() => {
        checkAcquirerLink(ca, { calls: true, serves: false }, noFiles);
      }),
    ).toContain('ACQUIRER_CA_FILE names a file that cannot be read');
  });
});

/** Production refuses the development database and Redis passwords: real-looking ones. */
const CREDENTIALS = {
  DATABASE_URL: 'postgres://svc:s3cret@db:5432/payments',
  REDIS_URL: 'redis://:s3cret@redis:6379',
};

describe('the token check of the acquirer role', () => {
  function checkWithLog() {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    let clock = 0;
    const check = createTokenCheck(TOKEN, logger, 10_000, () => clock);
    return { check, lines, advance: (ms: number) => (clock += ms) };
  }

  it('when the bearer token is right, then it passes; missing, malformed or wrong, then it does not', () => {
    const { check } = checkWithLog();
    expect(check.allows({ authorization: `Bearer ${TOKEN}` })).toBe(true);
    expect(check.allows({ authorization: `bearer ${TOKEN}` })).toBe(true);
    expect(check.allows({})).toBe(false);
    expect(check.allows({ authorization: TOKEN })).toBe(false);
    expect(check.allows({ authorization: `Bearer ${TOKEN}x` })).toBe(false);
    expect(check.allows({ authorization: `Bearer ${TOKEN.slice(0, -1)}` })).toBe(false);
    expect(check.allows({ authorization: 'Bearer ' })).toBe(false);
  });

  it('when a burst of calls is refused, then one line per interval, counting the rest', () => {
    const { check, lines, advance } = checkWithLog();
    for (let i = 0; i < 500; i++) check.allows({ authorization: 'Bearer wrong-token-here' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ reason: 'wrong token', refused_since_last_line: 1 });
    expect(JSON.stringify(lines[0])).not.toContain(TOKEN);
    advance(10_000);
    check.allows({});
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ reason: 'missing', refused_since_last_line: 500 });
  });
});

describe('a 401 from the acquirer', () => {
  it('when settlement reads it, then it is a configuration fault never sent: no attempt, no dead letter', () => {
    const failure = failureOf({ status: 401, headers: {}, json: { error: 'unauthorized' } });
    expect(failure).toMatchObject({ errorClass: 'acquirer_unauthorized', delivery: 'not_sent' });
    expect(failure.message).toContain('ACQUIRER_TOKEN');
  });
});
