import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Points this process (and every child it starts) at the bench's own stack: the URLs
 * `scripts/stack.sh env` prints for the stack STACK_DIR and the *_STACK ports name. The bench
 * measures that stack's Postgres, Redis and Kafka by their pids, so the services it loads must be
 * the same ones, whatever DATABASE_URL or REDIS_URL the caller's shell had. Returns the names set.
 */
export async function useStackEnv(root: string): Promise<string[]> {
  const { stdout } = await run('bash', [path.join(root, 'scripts/stack.sh'), 'env'], {
    timeout: 30_000,
  });
  const names: string[] = [];
  for (const line of stdout.split('\n')) {
    const match = /^export ([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (!match?.[1] || match[2] === undefined) continue;
    process.env[match[1]] = match[2].replace(/^'(.*)'$/, '$1');
    names.push(match[1]);
  }
  if (!names.includes('DATABASE_URL'))
    throw new Error('scripts/stack.sh env printed no DATABASE_URL');
  return names;
}
