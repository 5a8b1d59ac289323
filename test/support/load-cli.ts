import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { LoadSummary } from '../../tools/load/load-summary.js';
import { REPO_ROOT } from './services.js';

export interface LoadCliResult {
  code: number;
  output: string;
}

/**
 * Runs the real `npm run load` entry point (dist-tools/tools/cli/load.js) with `args` and `env`
 * (nothing of this process's environment but PATH and HOME leaks in), and resolves with its exit
 * code and its whole output; never rejects on a non-zero exit, which is what tests look at.
 */
export async function runLoadCli(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<LoadCliResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [path.join(REPO_ROOT, 'dist-tools/tools/cli/load.js'), ...args],
      {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
        timeout: timeoutMs,
        maxBuffer: 32 * 1024 * 1024,
      },
    );
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
    };
  }
}

export type { LoadSummary };
