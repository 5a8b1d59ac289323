import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_REDIS_COMMANDS, apiRedisProbes } from '../../src/apps/api/redis-needs.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** scripts/redis/acl-users.sh's lines, `user <name>` to its rules. */
function aclUsers(env: Record<string, string> = {}): Map<string, string[]> {
  const out = execFileSync('sh', [path.join(ROOT, 'scripts/redis/acl-users.sh')], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
  const users = new Map<string, string[]>();
  for (const line of out.trim().split('\n')) {
    const [word, name = '', ...rules] = line.split(' ');
    expect(word).toBe('user');
    users.set(name, rules);
  }
  return users;
}

const granted = (rules: readonly string[]) =>
  rules.filter((rule) => rule.startsWith('+')).map((rule) => rule.slice(1));

/** The commands the API's code sends: direct client calls and its Lua scripts' redis.call. */
function commandsInCode(): Set<string> {
  const files = [
    'src/idempotency/response-cache.ts',
    'src/idempotency/key-lock.ts',
    'src/idempotency/redlock-client.ts',
    'src/rate-limits/rate-limiter.ts',
    'src/platform/redis/redis-script.ts',
    'src/platform/redis/redis.ts',
  ];
  // Client methods, not commands; `attempt` is the RedisGuard's (key-lock.ts), not the client's.
  const notCommands = new Set(['on', 'off', 'connect', 'disconnect', 'quit', 'call', 'attempt']);
  const found = new Set<string>();
  for (const file of files) {
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    for (const [, name = ''] of source.matchAll(/redis\.call\('([A-Za-z]+)'/g)) {
      found.add(name.toLowerCase());
    }
    for (const [, name = ''] of source.matchAll(/\bredis\.([a-z]+)\(/g)) {
      if (!notCommands.has(name)) found.add(name);
    }
  }
  return found;
}

describe('the Redis users (scripts/redis/acl-users.sh, DESIGN 117)', () => {
  it('when the script prints payments_api, then it may run exactly the commands the API sends, on its two key patterns only', () => {
    const rules = aclUsers().get('payments_api') ?? [];
    expect(new Set(granted(rules))).toEqual(new Set(API_REDIS_COMMANDS));
    expect(rules.filter((rule) => rule.startsWith('~'))).toEqual([
      '~payments:idem:*',
      '~payments:rl:*',
    ]);
    expect(rules).toEqual(expect.arrayContaining(['reset', 'on', 'resetchannels', '-@all']));
    expect(rules.some((rule) => rule.startsWith('&') || rule.startsWith('+@'))).toBe(false);
    for (const forbidden of ['flushall', 'flushdb', 'keys', 'config', 'acl', 'script', 'scan']) {
      expect(granted(rules)).not.toContain(forbidden);
    }
  });

  it('when the code is read, then every command it sends (scripts included) is granted to payments_api, and none more', () => {
    // TIME, EXISTS... only in the scripts; INFO and CLUSTER are ioredis' (no call in our code).
    expect([...commandsInCode()].sort()).toEqual(
      API_REDIS_COMMANDS.filter(
        (command) => command !== 'info' && !command.startsWith('cluster'),
      ).sort(),
    );
  });

  it('when the API probes its user at boot, then every granted command is probed, on keys of its patterns only', () => {
    const probes = apiRedisProbes('payments:', true);
    const names = probes.map(([command, sub]) =>
      command === 'cluster' ? `cluster|${String(sub)}` : command,
    );
    expect(new Set(names)).toEqual(new Set(API_REDIS_COMMANDS));
    expect(apiRedisProbes('payments:').some(([command]) => command === 'cluster')).toBe(false);
    const keys = probes.flatMap(([command, ...args]) => {
      if (command === 'eval' || command === 'evalsha') return args.slice(2);
      if (['ping', 'info', 'time', 'cluster'].includes(command)) return [];
      return args.filter((_, index) => index === 0 || (command === 'del' && index === 1));
    });
    expect(keys.length).toBeGreaterThan(4);
    for (const key of keys) expect(String(key)).toMatch(/^payments:(idem|rl):/);
  });

  it('when passwords and the prefix are given, then the file holds their hashes, never the passwords, and the prefix in the patterns', () => {
    const users = aclUsers({
      REDIS_KEY_PREFIX: 'shop-a:',
      PAYMENTS_REDIS_API_PASSWORD: 's3cret-api',
      PAYMENTS_REDIS_ADMIN_PASSWORD: 's3cret-admin',
    });
    const api = users.get('payments_api') ?? [];
    const sha = createHash('sha256').update('s3cret-api').digest('hex');
    expect(api).toContain(`#${sha}`);
    expect(api.join(' ')).not.toContain('s3cret');
    expect(api).toEqual(expect.arrayContaining(['~shop-a:idem:*', '~shop-a:rl:*']));
    expect((users.get('payments') ?? []).join(' ')).not.toContain('s3cret');
  });

  it('when compose asks for a PING-only default user, then it can run nothing else; natively it stays open', () => {
    expect(aclUsers({ PAYMENTS_REDIS_DEFAULT_USER: 'ping' }).get('default')).toEqual([
      'reset',
      'on',
      'nopass',
      'resetkeys',
      'resetchannels',
      '-@all',
      '+ping',
    ]);
    expect(aclUsers().get('default')).toContain('+@all');
  });

  it('when the prefix holds a glob character, then the script refuses it', () => {
    expect(() => aclUsers({ REDIS_KEY_PREFIX: 'a*' })).toThrow();
  });
});
