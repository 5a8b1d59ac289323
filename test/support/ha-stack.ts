import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './services.js';

const run = promisify(execFile);

/**
 * `STACK_TOPOLOGY=ha scripts/stack.sh <args>` (test/ha: the HA topology the run's environment
 * points at, STACK_DIR included), bounded by `timeoutMs`; resolves with its output, rejects with
 * its stderr when it fails.
 */
export async function haStack(args: readonly string[], timeoutMs = 180_000): Promise<string> {
  const { stdout } = await run('bash', [path.join(REPO_ROOT, 'scripts/stack.sh'), ...args], {
    env: { ...process.env, STACK_TOPOLOGY: 'ha' },
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
  });
  return stdout;
}

/** The postmaster pid of the HA topology's current Postgres primary. */
export async function haPostgresPrimaryPid(): Promise<number> {
  const pid = Number((await haStack(['pid', 'postgres-primary'], 10_000)).trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postgres primary pid (${pid})`);
  return pid;
}
