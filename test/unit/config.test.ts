import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';

function errorFor(env: Record<string, string>, readFile?: (path: string) => string): ConfigError {
  try {
    loadConfig(env, readFile);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected loadConfig to throw');
}

describe('loadConfig', () => {
  it('when nothing is set, then the defaults point at the local native stack', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.DATABASE_URL).toBe('postgres://payments:payments@127.0.0.1:5432/payments');
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(config.KAFKA_BROKERS).toEqual(['127.0.0.1:9092']);
    expect(config.KAFKA_TOPIC_PAYMENTS).toBe('payments.events');
    expect(config.KAFKA_TOPIC_DLQ).toBe('payments.settlement.dlq');
  });

  it('when values are given, then they are parsed into typed settings', () => {
    const config = loadConfig({
      PORT: '8080',
      KAFKA_BROKERS: 'a:9092, b:9093',
      LOG_LEVEL: 'debug',
      DATABASE_POOL_MAX: '5',
    });
    expect(config.PORT).toBe(8080);
    expect(config.KAFKA_BROKERS).toEqual(['a:9092', 'b:9093']);
    expect(config.LOG_LEVEL).toBe('debug');
    expect(config.DATABASE_POOL_MAX).toBe(5);
  });

  it('when a variable is empty, then it counts as unset', () => {
    expect(loadConfig({ PORT: '' }).PORT).toBe(3000);
  });

  it('when PORT is not a number, then the error is one line naming PORT and the value', () => {
    const error = errorFor({ PORT: 'abc' });
    expect(error.variable).toBe('PORT');
    expect(error.message).toBe(
      'invalid configuration: PORT must be an integer between 0 and 65535 (got "abc")',
    );
    expect(error.message).not.toContain('\n');
  });

  it('when PORT is out of range, then it is rejected', () => {
    expect(errorFor({ PORT: '70000' }).message).toContain('PORT must be at most 65535');
  });

  it('when DATABASE_URL is malformed, then it is rejected without echoing the value', () => {
    const error = errorFor({ DATABASE_URL: 'postgres//user:secret@host/db' });
    expect(error.variable).toBe('DATABASE_URL');
    expect(error.message).toContain('DATABASE_URL must be a URL like postgres://');
    expect(error.message).not.toContain('secret');
  });

  it('when DATABASE_URL has the wrong scheme, then it is rejected', () => {
    expect(errorFor({ DATABASE_URL: 'mysql://u:p@h/db' }).variable).toBe('DATABASE_URL');
  });

  it('when REDIS_URL is not a redis URL, then it is rejected', () => {
    expect(errorFor({ REDIS_URL: 'http://localhost:6379' }).variable).toBe('REDIS_URL');
  });

  it('when KAFKA_BROKERS lacks a port, then it is rejected', () => {
    const error = errorFor({ KAFKA_BROKERS: 'localhost' });
    expect(error.variable).toBe('KAFKA_BROKERS');
    expect(error.message).toContain('host:port');
  });

  it('when LOG_LEVEL is unknown, then the message lists what is allowed', () => {
    const error = errorFor({ LOG_LEVEL: 'loud' });
    expect(error.variable).toBe('LOG_LEVEL');
    expect(error.message).toContain('"info"');
  });
});

describe('loadConfig: secrets from files and production defaults', () => {
  const files: Record<string, string> = {
    '/run/secrets/db': 'postgres://app:s3cret@db.internal:5432/payments\n',
    '/run/secrets/redis': 'redis://:hunter2@cache.internal:6379',
    '/run/secrets/empty': '\n',
  };
  const readFile = (path: string): string => {
    const content = files[path];
    if (content === undefined) {
      throw Object.assign(new Error(`ENOENT: no such file, open '${path}'`), { code: 'ENOENT' });
    }
    return content;
  };

  it('when DATABASE_URL_FILE and REDIS_URL_FILE name readable files, then their contents are the URLs (trailing newline dropped)', () => {
    const config = loadConfig(
      { DATABASE_URL_FILE: '/run/secrets/db', REDIS_URL_FILE: '/run/secrets/redis' },
      readFile,
    );
    expect(config.DATABASE_URL).toBe('postgres://app:s3cret@db.internal:5432/payments');
    expect(config.REDIS_URL).toBe('redis://:hunter2@cache.internal:6379');
  });

  it('when the file cannot be read, then one line names the _FILE setting and the error code', () => {
    const error = errorFor({ DATABASE_URL_FILE: '/run/secrets/missing' }, readFile);
    expect(error.variable).toBe('DATABASE_URL_FILE');
    expect(error.message).toBe(
      'invalid configuration: DATABASE_URL_FILE names a file that cannot be read (ENOENT: /run/secrets/missing)',
    );
  });

  it('when the file is empty, then it is refused rather than falling back to the default', () => {
    expect(errorFor({ REDIS_URL_FILE: '/run/secrets/empty' }, readFile).variable).toBe(
      'REDIS_URL_FILE',
    );
  });

  it('when both X and X_FILE are set, then it is an error naming X', () => {
    const error = errorFor(
      { DATABASE_URL: 'postgres://a:b@h/db', DATABASE_URL_FILE: '/run/secrets/db' },
      readFile,
    );
    expect(error.variable).toBe('DATABASE_URL');
    expect(error.message).toContain('DATABASE_URL_FILE are both set');
  });

  it('when the file holds an invalid URL, then the error names the setting without echoing the secret', () => {
    const error = errorFor({ DATABASE_URL_FILE: '/run/secrets/redis' }, readFile);
    expect(error.variable).toBe('DATABASE_URL');
    expect(error.message).not.toContain('hunter2');
  });

  it('when NODE_ENV=production and DATABASE_URL is left at its default, then start-up is refused with one line naming it', () => {
    const error = errorFor({ NODE_ENV: 'production' });
    expect(error.variable).toBe('DATABASE_URL');
    expect(error.message).toBe(
      'invalid configuration: DATABASE_URL uses the built-in development credentials, refused with NODE_ENV=production',
    );
  });

  it('when NODE_ENV=production and a URL carries payments:payments on another host, then it is refused too', () => {
    const error = errorFor({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://app:s3cret@db/payments',
      REDIS_URL: 'redis://payments:payments@cache:6379',
    });
    expect(error.variable).toBe('REDIS_URL');
  });

  it.each(['payments_api', 'payments_relay', 'payments_settlement'])(
    'when NODE_ENV=production and DATABASE_URL is the local %s login (password = name), then it is refused',
    (role) => {
      const error = errorFor({
        NODE_ENV: 'production',
        DATABASE_URL: `postgres://${role}:${role}@db:5432/payments`,
      });
      expect(error.variable).toBe('DATABASE_URL');
      expect(error.message).toContain('built-in development credentials');
    },
  );

  it('when NODE_ENV=production and REDIS_URL is the local payments_api Redis user (password = name), then it is refused', () => {
    const error = errorFor({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://app:s3cret@db/payments',
      REDIS_URL: 'redis://payments_api:payments_api@cache:6379',
    });
    expect(error.variable).toBe('REDIS_URL');
    expect(error.message).toContain('built-in development credentials');
  });

  it('when NODE_ENV=production and the credentials are real, then the configuration loads', () => {
    const config = loadConfig(
      { NODE_ENV: 'production', DATABASE_URL_FILE: '/run/secrets/db' },
      readFile,
    );
    expect(config.DATABASE_URL).toContain('app:s3cret');
  });

  it('when NODE_ENV is development, then the built-in credentials are accepted', () => {
    expect(loadConfig({}).DATABASE_URL).toContain('payments:payments');
  });

  it.each([
    [undefined, false],
    ['false', false],
    ['true', true],
    ['2', 2],
    ['loopback', ['loopback']],
    [
      '10.0.0.0/8, 192.168.1.7,fd00::/8, uniquelocal',
      ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', 'uniquelocal'],
    ],
  ])('when TRUST_PROXY=%j, then it is parsed for Express as %j', (value, parsed) => {
    expect(loadConfig(value === undefined ? {} : { TRUST_PROXY: value }).TRUST_PROXY).toEqual(
      parsed,
    );
  });

  it.each([
    ['yes'],
    ['0'],
    ['33'],
    ['10.0.0.0/33'],
    ['::1/129'],
    ['loopback,'],
    ['300.1.1.1'],
    ['lan'],
  ])(
    'when TRUST_PROXY=%j, then it is refused with one line naming TRUST_PROXY and the value',
    (value) => {
      const error = errorFor({ TRUST_PROXY: value });
      expect(error.variable).toBe('TRUST_PROXY');
      expect(error.message).toMatch(
        /^invalid configuration: TRUST_PROXY must be false, true, a hop count/,
      );
      expect(error.message).toContain(`(got ${JSON.stringify(value)})`);
      expect(error.message).not.toContain('\n');
    },
  );

  it.each(['SETTLEMENT_LEASE_MS', 'REFUND_LEASE_MS'])(
    'when %s does not outlast the acquirer timeout plus the completion bound, then one line names it',
    (name) => {
      const error = errorFor({
        [name]: '11000',
        ACQUIRER_TIMEOUT_MS: '2000',
        DATABASE_QUERY_TIMEOUT_MS: '9000',
      });
      expect(error.variable).toBe(name);
      expect(error.message).toBe(
        `invalid configuration: ${name} must exceed ACQUIRER_TIMEOUT_MS + DATABASE_QUERY_TIMEOUT_MS (2000 + 9000 = 11000 ms), one attempt's longest run (got 11000)`,
      );
      expect(error.message).not.toContain('\n');
      const config = loadConfig({
        [name]: '11001',
        ACQUIRER_TIMEOUT_MS: '2000',
        DATABASE_QUERY_TIMEOUT_MS: '9000',
      });
      expect(config[name as 'SETTLEMENT_LEASE_MS' | 'REFUND_LEASE_MS']).toBe(11001);
    },
  );

  it("when no REFUND_* setting is given, then refunds get the charges' values (SETTLEMENT_* defaults)", () => {
    const config = loadConfig({});
    expect({
      maxAttempts: config.REFUND_MAX_ATTEMPTS,
      backoffBaseMs: config.REFUND_BACKOFF_BASE_MS,
      backoffCapMs: config.REFUND_BACKOFF_CAP_MS,
      leaseMs: config.REFUND_LEASE_MS,
      concurrency: config.REFUND_CONCURRENCY,
      pollMs: config.REFUND_POLL_MS,
    }).toEqual({
      maxAttempts: config.SETTLEMENT_MAX_ATTEMPTS,
      backoffBaseMs: config.SETTLEMENT_BACKOFF_BASE_MS,
      backoffCapMs: config.SETTLEMENT_BACKOFF_CAP_MS,
      leaseMs: config.SETTLEMENT_LEASE_MS,
      concurrency: config.SETTLEMENT_CONCURRENCY,
      pollMs: config.SETTLEMENT_POLL_MS,
    });
  });

  it('when the unauthenticated burst is under one second of its rate, then it is refused', () => {
    const error = errorFor({
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '600',
      RATE_LIMIT_UNAUTHENTICATED_BURST: '5',
    });
    expect(error.variable).toBe('RATE_LIMIT_UNAUTHENTICATED_BURST');
  });
});
