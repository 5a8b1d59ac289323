import { spawn } from 'node:child_process';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../src/platform/lifecycle/service-node-flags.js';
import { REPO_ROOT } from './services.js';

export interface RoleProcess {
  /** The first JSON log line whose `msg` is `msg` (waits for it; rejects if the process exits). */
  logLine: (msg: string) => Promise<Record<string, unknown>>;
  /** Sends `signal` and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
  /** Resolves with the exit code once the process has exited on its own (or been stopped). */
  exited: Promise<number | null>;
  output: () => string;
}

/** Runs a compiled entry point (`dist/<entry>`) with exactly `env` plus PATH. */
export function startRoleProcess(entry: string, env: Record<string, string>): RoleProcess {
  const child = spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, path.join(REPO_ROOT, 'dist', entry)],
    {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    const complete = output.slice(0, output.lastIndexOf('\n'));
    lines.length = 0;
    for (const line of complete.split('\n')) {
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    for (const waiter of waiters) waiter();
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      for (const waiter of waiters) waiter();
      resolve(code);
    });
  });

  return {
    logLine: (msg) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find((line) => line.msg === msg);
          if (found) {
            waiters.delete(check);
            resolve(found);
          } else if (child.exitCode !== null) {
            waiters.delete(check);
            reject(new Error(`${entry} exited ${child.exitCode} before "${msg}": ${output}`));
          }
        };
        waiters.add(check);
        check();
      }),
    stop: (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
    exited,
    output: () => output,
  };
}

/** The `msg` of every fatal (pino level 60) JSON line of a process's output: why it stopped. */
export function fatalLines(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level >= 60)
    .map((line) => line.msg);
}
