import type { RedisClient } from './redis.js';
import type { Logger } from '../telemetry/logger.js';

/** One command a role sends, as it sends it (on a key of the pattern it uses). */
export type RedisProbe = readonly [command: string, ...args: (string | number)[]];

/** The Redis user lacks a command or a key pattern its role needs (NOPERM), or cannot log in. */
export class RedisPermissionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisPermissionError';
  }

  static refused(user: string, probe: RedisProbe, reply: string): RedisPermissionError {
    const [command, key] = probe;
    const on = typeof key === 'string' && key.includes(':') ? ` on ${key}` : '';
    return new RedisPermissionError(
      `REDIS_URL logs in as Redis user ${user}, which may not run ${command.toUpperCase()}${on} ` +
        `(${reply}); grant it (scripts/redis/acl-users.sh)`,
    );
  }

  static login(user: string, reply: string): RedisPermissionError {
    return new RedisPermissionError(`REDIS_URL cannot log in as Redis user ${user} (${reply})`);
  }
}

/** The user REDIS_URL names (`default` when it names none). */
export function redisUser(url: string): string {
  const name = decodeURIComponent(new URL(url).username);
  return name === '' ? 'default' : name;
}

/**
 * Sends each probe in turn; throws RedisPermissionError naming the first one Redis refuses with
 * NOPERM. Any other error (Redis away) rejects as it is. The probes are the role's real commands
 * on throwaway keys of its patterns, so a user that passes can run everything the role sends
 * (a script's inner commands are checked against the same user).
 */
export async function checkRedisPermissions(
  redis: RedisClient,
  user: string,
  probes: readonly RedisProbe[],
): Promise<void> {
  for (const probe of probes) {
    const [command, ...args] = probe;
    try {
      await redis.call(command, ...args);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message.startsWith('NOPERM')) throw RedisPermissionError.refused(user, probe, message);
      throw error;
    }
  }
}

/**
 * The start-up check of a role that uses Redis: at boot when Redis answers (awaited), else (and
 * after every reconnect) as soon as it does. `refuse` gets the error of a missing permission or
 * of a refused login; a Redis that goes away mid-check is only logged (the next reconnect checks
 * again). Returns a stop function.
 */
export async function guardRedisPermissions(
  redis: RedisClient,
  user: string,
  probes: readonly RedisProbe[],
  logger: Logger,
  refuse: (error: RedisPermissionError) => void,
): Promise<() => void> {
  const check = async () => {
    try {
      await checkRedisPermissions(redis, user, probes);
    } catch (error) {
      if (error instanceof RedisPermissionError) refuse(error);
      else logger.warn({ err: error }, 'redis permission check interrupted; retried on reconnect');
    }
  };
  const onReady = () => {
    void check();
  };
  // A wrong password or a disabled user: ioredis would retry it forever as if Redis were away.
  const onError = (error: Error) => {
    if (/^(WRONGPASS|NOAUTH)/.test(error.message)) {
      refuse(RedisPermissionError.login(user, error.message));
    }
  };
  redis.on('ready', onReady);
  redis.on('error', onError);
  if (redis.status === 'ready') await check();
  return () => {
    redis.off('ready', onReady);
    redis.off('error', onError);
  };
}
