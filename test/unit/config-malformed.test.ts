import { describe, expect, it } from 'vitest';
import { ConfigError, configSchema, loadConfig } from '../../src/platform/config/config.js';

// A malformed list, duration or number stops the process with one line naming the setting and
// the form it accepts, never with a zod type error about a value the field could not read.

function errorFor(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

/** Zod's own wording, meaningless to an operator: "expected number, received undefined". */
const ZOD_WORDING = /Invalid input|expected \w+, received|Too (big|small)/;

describe('loadConfig: malformed lists, durations and numbers', () => {
  it.each([
    ['5000,300000', [5_000, 300_000]],
    ['5s, 5m,30m', [5_000, 300_000, 1_800_000]],
    ['250ms,2h,1d', [250, 7_200_000, 86_400_000]],
    ['7d', [604_800_000]],
  ])('when WEBHOOK_RETRY_SCHEDULE=%j, then it is read as %j milliseconds', (value, delays) => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: value }).WEBHOOK_RETRY_SCHEDULE).toEqual(delays);
  });

  it.each(['5000,x', '5s,5 m', '0', '8d', '5sec', '-5s', '1.5s', ','])(
    'when WEBHOOK_RETRY_SCHEDULE=%j, then one line names it and the accepted form',
    (value) => {
      const error = errorFor({ WEBHOOK_RETRY_SCHEDULE: value });
      expect(error.variable).toBe('WEBHOOK_RETRY_SCHEDULE');
      expect(error.message).toMatch(
        /^invalid configuration: WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of delays from 1 ms to 7d, each in milliseconds or with a unit \(ms, s, m, h, d\), e\.g\. 5000,300000 or 5s,5m,30m/,
      );
      expect(error.message).toContain(`(got ${JSON.stringify(value)})`);
      expect(error.message).not.toContain('\n');
    },
  );

  it('when WEBHOOK_RETRY_SCHEDULE lists more than 50 delays, then the line says how many it takes', () => {
    const error = errorFor({ WEBHOOK_RETRY_SCHEDULE: Array<string>(51).fill('5s').join(',') });
    expect(error.message).toContain('with 1 to 50 entries');
  });

  it('when the example of the message is set, then it is accepted', () => {
    const error = errorFor({ WEBHOOK_RETRY_SCHEDULE: 'x' });
    const examples = /e\.g\. (\S+) or (\S+) /.exec(error.message);
    for (const example of examples?.slice(1) ?? ['missing']) {
      expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: example }), example).not.toThrow();
    }
  });

  it('when KAFKA_BROKERS holds an entry without a port, then the line names the entry and the form', () => {
    expect(errorFor({ KAFKA_BROKERS: 'a:9092,b' }).message).toBe(
      'invalid configuration: KAFKA_BROKERS must be a comma-separated list of Kafka brokers as host:port, e.g. 127.0.0.1:9092,10.0.0.2:9092 ("b" is not) (got "a:9092,b")',
    );
  });

  it('when WEBHOOK_ALLOWED_NETWORKS holds an address without its prefix length, then the line names the form', () => {
    expect(errorFor({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1' }).message).toBe(
      'invalid configuration: WEBHOOK_ALLOWED_NETWORKS must be a comma-separated list of IP networks with their prefix length, e.g. 127.0.0.0/8,::1/128 ("127.0.0.1" is not) (got "127.0.0.1")',
    );
  });

  it('when any setting is given a malformed value, then the refusal is one line naming it, in words not zod types', () => {
    const malformed = ['x', '1,x', '-1', '1.5', '1e3', ',', '99999999999999999999', ' '];
    let refusals = 0;
    for (const variable of Object.keys(configSchema.shape)) {
      for (const value of malformed) {
        let error: unknown;
        try {
          loadConfig({ [variable]: value });
        } catch (thrown) {
          error = thrown;
        }
        if (error === undefined) continue;
        refusals += 1;
        const where = `${variable}=${JSON.stringify(value)}`;
        expect(error, where).toBeInstanceOf(ConfigError);
        const { message, variable: named } = error as ConfigError;
        expect(named, where).toBe(variable);
        expect(message, where).not.toMatch(ZOD_WORDING);
        expect(message, where).not.toContain('\n');
      }
    }
    expect(refusals).toBeGreaterThan(400);
  });
});
