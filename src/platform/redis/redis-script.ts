import { createHash } from 'node:crypto';
import type { RedisClient } from './redis.js';

/** A Lua script sent by its SHA1 (EVALSHA); its text goes out only when Redis lacks it. */
export interface RedisScript {
  /** Runs the script: one round trip, two only after a Redis restart or SCRIPT FLUSH. */
  run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown>;
}

/**
 * A script run with EVALSHA, falling back to EVAL (which also loads it) when Redis answers
 * NOSCRIPT. Every call is one command, so it is bounded by the client's command timeout like any
 * other and joins an auto-pipelined batch like any other.
 */
export function redisScript(source: string): RedisScript {
  const sha = createHash('sha1').update(source).digest('hex');
  return {
    async run(redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return redis.eval(source, keys.length, ...keys, ...args);
      }
    },
  };
}
