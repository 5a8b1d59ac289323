import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { uniqueSuffix } from './isolation.js';
import { REPO_ROOT } from './services.js';

export interface RedisRoleUser {
  name: string;
  /** `base` (the run's Redis URL by default) logging in as this user. */
  url: (base?: string) => string;
  /** ACL DELUSER (the suite's admin connection). */
  drop: () => Promise<void>;
}

/**
 * The API's Redis user as deployed (scripts/redis/acl-users.sh's payments_api line), for keys
 * under `prefix` (a test's REDIS_KEY_PREFIX), under a name of its own so files running at once
 * do not share one. `without` drops commands from its grant (a user that lacks one).
 */
export async function createApiRedisUser(
  prefix: string,
  without: readonly string[] = [],
): Promise<RedisRoleUser> {
  const suffix = uniqueSuffix();
  const name = `payments_api_${suffix}`;
  const password = `pw_${suffix}`;
  const lines = execFileSync('sh', [path.join(REPO_ROOT, 'scripts/redis/acl-users.sh')], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_KEY_PREFIX: prefix,
      PAYMENTS_REDIS_API_PASSWORD: password,
    },
    encoding: 'utf8',
  }).split('\n');
  const line = lines.find((candidate) => candidate.startsWith('user payments_api '));
  if (!line) throw new Error('acl-users.sh printed no payments_api line');
  const rules = line
    .split(' ')
    .slice(2)
    .filter((rule) => !without.some((command) => rule === `+${command}`));
  const admin = new Redis(inject('services').redisUrl);
  try {
    await admin.call('ACL', 'SETUSER', name, ...rules);
  } finally {
    admin.disconnect();
  }
  return {
    name,
    url: (base = inject('services').redisUrl) => {
      const url = new URL(base);
      url.username = name;
      url.password = password;
      return url.toString();
    },
    drop: async () => {
      const client = new Redis(inject('services').redisUrl);
      try {
        await client.call('ACL', 'DELUSER', name);
      } finally {
        client.disconnect();
      }
    },
  };
}
