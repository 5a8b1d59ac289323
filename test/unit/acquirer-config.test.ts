import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';

/** The acquirer role's settings (issue 29): where it listens, where settlement reaches it. */

function messageFor(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected loadConfig to throw');
}

describe('acquirer settings', () => {
  it('when nothing is set, then the acquirer listens on 127.0.0.1:3100 and settlement runs the simulator in-process', () => {
    const config = loadConfig({});
    expect(config.ACQUIRER_PORT).toBe(3100);
    expect(config.ACQUIRER_HOST).toBe('127.0.0.1');
    expect(config.ACQUIRER_URL).toBeUndefined();
  });

  it('when they are given, then they are parsed', () => {
    const config = loadConfig({
      ACQUIRER_PORT: '0',
      ACQUIRER_HOST: '0.0.0.0',
      ACQUIRER_URL: 'http://acquirer:3100',
    });
    expect(config).toMatchObject({
      ACQUIRER_PORT: 0,
      ACQUIRER_HOST: '0.0.0.0',
      ACQUIRER_URL: 'http://acquirer:3100',
    });
  });

  it.each([
    [{ ACQUIRER_PORT: 'abc' }, 'ACQUIRER_PORT must be an integer between 0 and 65535'],
    [{ ACQUIRER_PORT: '70000' }, 'ACQUIRER_PORT must be at most 65535'],
    [{ ACQUIRER_URL: 'ftp://acquirer' }, 'ACQUIRER_URL must be a URL like http://127.0.0.1:3100'],
    [{ ACQUIRER_URL: 'not a url' }, 'ACQUIRER_URL must be a URL like http://127.0.0.1:3100'],
  ])('when %j, then one line names the setting', (env, message) => {
    const line = messageFor(env);
    expect(line).toContain(message);
    expect(line).not.toContain('\n');
  });
});
