import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NODE_FLAGS } from '../../src/platform/lifecycle/service-node-flags.js';
import { freePort } from '../support/free-port.js';

/** The repository root (this file is dist-tools/tools/bench/bench-process.js once built). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** A compiled service entry point (`npm run build`), e.g. `apps/api/main.js`. */
export function serviceEntry(entry: string): string {
  return path.join(ROOT, 'dist', entry);
}

/** A compiled tool (`npm run build:tools`), e.g. `cli/bare-express.js`. */
export function toolEntry(entry: string): string {
  return path.join(ROOT, 'dist-tools', 'tools', entry);
}

/**
 * Starts a compiled entry point (a path from serviceEntry or toolEntry) on a free port and resolves
 * once it answers HTTP on `probePath`. The port is given as PORT (the API, the bare Express
 * reference); roles without the API get it as METRICS_PORT (their internal listener, /metrics),
 * and processes that run the API get an internal listener on any free port.
 */
export async function startProcess(
  entry: string,
  env: Record<string, string>,
  probePath: string,
  nodeArgs: readonly string[] = [],
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  // Services run with the flags they are deployed with; `nodeArgs` come after and win.
  const serviceFlags = entry.startsWith(path.join(ROOT, 'dist') + path.sep)
    ? SERVICE_NODE_FLAGS
    : [];
  const child = spawn(process.execPath, [...serviceFlags, ...nodeArgs, entry], {
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      METRICS_PORT: /apps\/(api|all)\//.test(entry) ? '0' : String(port),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const state = { exited: false };
  child.on('exit', () => {
    state.exited = true;
  });
  for (let i = 0; i < 200 && !state.exited; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}${probePath}`);
      return { child, port };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill();
  throw new Error(`${path.relative(ROOT, entry)} did not answer on port ${port}`);
}

/**
 * Node flags for the API process only, from BENCH_API_NODE_ARGS (space-separated), e.g.
 * `--max-semi-space-size=8` to compare memory and throughput of V8 settings (DESIGN 25).
 */
export function apiNodeArgs(): string[] {
  return (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
}

/** Peak resident memory (VmHWM) of a process, in MB. */
export async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** SIGTERM, then wait for the exit (bounded: SIGKILL after 20 s). */
export function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
