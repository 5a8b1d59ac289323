import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config.js';

function errorFor(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
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
