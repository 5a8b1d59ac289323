import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';
import { kafkaSecurity } from '../../src/platform/kafka/kafka-security.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const files: Record<string, string> = { '/run/ca.pem': CA, '/run/kafka-password': 'p4ss\n' };
const readFile = (path: string): string => {
  const content = files[path];
  if (content === undefined) {
    throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  }
  return content;
};

function errorLine(env: Record<string, string>): string {
  try {
    loadConfig(env, readFile);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected loadConfig to throw');
}

const LOGIN = {
  KAFKA_SASL_MECHANISM: 'scram-sha-512',
  KAFKA_SASL_USERNAME: 'payments',
  KAFKA_SASL_PASSWORD: 's3cret-pw',
};

describe('the Kafka TLS, SASL and replication settings', () => {
  it('when none is set, then the client is plaintext without a login, on the broker defaults', () => {
    const config = loadConfig({});
    expect(config.KAFKA_SSL).toBe(false);
    expect(config.KAFKA_SASL_MECHANISM).toBeUndefined();
    expect(config.KAFKA_TOPIC_REPLICATION_FACTOR).toBeUndefined();
    expect(config.KAFKA_TOPIC_MIN_INSYNC_REPLICAS).toBeUndefined();
    expect(kafkaSecurity(config, readFile)).toEqual({});
  });

  it('when a CA file and a SCRAM login are set, then TLS verifies against that CA and SASL logs in', () => {
    const config = loadConfig(
      {
        ...LOGIN,
        KAFKA_SSL_CA_FILE: '/run/ca.pem',
        KAFKA_TOPIC_REPLICATION_FACTOR: '3',
        KAFKA_TOPIC_MIN_INSYNC_REPLICAS: '2',
      },
      readFile,
    );
    expect(config.KAFKA_TOPIC_REPLICATION_FACTOR).toBe(3);
    expect(config.KAFKA_TOPIC_MIN_INSYNC_REPLICAS).toBe(2);
    expect(kafkaSecurity(config, readFile)).toEqual({
      ssl: { rejectUnauthorized: true, ca: [CA] },
      sasl: { mechanism: 'scram-sha-512', username: 'payments', password: 's3cret-pw' },
    });
  });

  it('when KAFKA_SSL=true alone, then TLS verifies against the system CAs', () => {
    const config = loadConfig({ KAFKA_SSL: 'true' }, readFile);
    expect(kafkaSecurity(config, readFile)).toEqual({ ssl: { rejectUnauthorized: true } });
  });

  it('when the password comes from KAFKA_SASL_PASSWORD_FILE, then it is the file without its newline', () => {
    const config = loadConfig(
      { ...LOGIN, KAFKA_SASL_PASSWORD: '', KAFKA_SASL_PASSWORD_FILE: '/run/kafka-password' },
      readFile,
    );
    expect(config.KAFKA_SASL_PASSWORD).toBe('p4ss');
  });

  it.each([
    [
      { KAFKA_SASL_MECHANISM: 'scram-sha-512' },
      'invalid configuration: KAFKA_SASL_MECHANISM needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD too (a SASL login)',
    ],
    [
      { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'payments' },
      'invalid configuration: KAFKA_SASL_MECHANISM needs KAFKA_SASL_PASSWORD too (a SASL login)',
    ],
    [
      { KAFKA_SASL_USERNAME: 'payments', KAFKA_SASL_PASSWORD: 's3cret-pw' },
      'invalid configuration: KAFKA_SASL_USERNAME needs KAFKA_SASL_MECHANISM too (a SASL login)',
    ],
    [
      { KAFKA_SASL_MECHANISM: 'gssapi' },
      'invalid configuration: KAFKA_SASL_MECHANISM must be plain, scram-sha-256 or scram-sha-512 (got "gssapi")',
    ],
    [{ KAFKA_SSL: 'yes' }, 'invalid configuration: KAFKA_SSL must be true or false (got "yes")'],
    [
      { KAFKA_SSL_CA_FILE: '/run/missing.pem' },
      'invalid configuration: KAFKA_SSL_CA_FILE names a file that cannot be read (ENOENT: /run/missing.pem)',
    ],
    [
      { KAFKA_TOPIC_REPLICATION_FACTOR: '0' },
      'invalid configuration: KAFKA_TOPIC_REPLICATION_FACTOR must be at least 1 (got "0")',
    ],
    [
      { KAFKA_TOPIC_REPLICATION_FACTOR: '1', KAFKA_TOPIC_MIN_INSYNC_REPLICAS: '2' },
      'invalid configuration: KAFKA_TOPIC_MIN_INSYNC_REPLICAS must not exceed KAFKA_TOPIC_REPLICATION_FACTOR (1): no write could succeed (got 2)',
    ],
    [
      { ...LOGIN, KAFKA_SASL_PASSWORD_FILE: '/run/kafka-password' },
      'invalid configuration: KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set; set only one',
    ],
  ])('when %j, then one line names the setting', (env, line) => {
    expect(errorLine(env)).toBe(line);
  });

  it('when the password is refused, then the line does not echo it', () => {
    const line = errorLine({ ...LOGIN, KAFKA_SASL_PASSWORD_FILE: '/run/nothing' });
    expect(line).toBe(
      'invalid configuration: KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set; set only one',
    );
    expect(line).not.toContain('s3cret-pw');
  });
});
