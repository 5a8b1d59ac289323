import type { RedisClient } from '../platform/redis/redis.js';

/** The script sources Redlock is given, to recognise its commands by hash or by text. */
export interface RedlockScriptIds {
  acquireSha: string;
  acquireSource: string;
  releaseSha: string;
  releaseSource: string;
}

type ScriptCall = (script: string, numKeys: number, args: (string | number)[]) => Promise<unknown>;

/**
 * The Redis client as Redlock sees it: every command goes to `redis`, except the release Redlock
 * sends after an acquire that failed, which is answered here (0: nothing released).
 *
 * Redlock's `acquire` always follows a failed attempt with its release script, to undo a partial
 * lock on a minority of a multi-node quorum. With one Redis and an acquire script that sets
 * everything or nothing there is nothing to undo, and the extra command would cost a round trip
 * on every held or cached key and a second command timeout when Redis is frozen. Only a release
 * whose lock value belongs to an acquire this client saw fail is skipped; `redlock.release` of a
 * lock that was taken goes to Redis as ever.
 */
export function redlockClient(redis: RedisClient, ids: RedlockScriptIds): RedisClient {
  /** Lock values whose acquire failed, until Redlock's clean-up release for them arrives. */
  const failed = new Set<string>();

  const acquire = async (send: () => Promise<unknown>, keys: number, value: string) => {
    try {
      const reply = await send();
      if (reply !== keys) failed.add(value);
      return reply;
    } catch (error) {
      // NOSCRIPT: Redlock sends the script's text next, under the same value.
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) failed.add(value);
      throw error;
    }
  };

  const wrap =
    (call: ScriptCall, isAcquire: (script: string) => boolean, isRelease: (s: string) => boolean) =>
    (script: string, numKeys: number, args: (string | number)[]): Promise<unknown> => {
      const value = String(args[numKeys]);
      if (isAcquire(script)) return acquire(() => call(script, numKeys, args), numKeys, value);
      if (isRelease(script) && failed.delete(value)) return Promise.resolve(0);
      return call(script, numKeys, args);
    };

  const evalsha = wrap(
    (sha, n, args) => redis.evalsha(sha, n, ...args),
    (sha) => sha === ids.acquireSha,
    (sha) => sha === ids.releaseSha,
  );
  const evalText = wrap(
    (source, n, args) => redis.eval(source, n, ...args),
    (source) => source === ids.acquireSource,
    (source) => source === ids.releaseSource,
  );
  return new Proxy(redis, {
    get(target, property, receiver) {
      if (property === 'evalsha') return evalsha;
      if (property === 'eval') return evalText;
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}
