import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, toolEntry } from './bench-process.js';

/**
 * Runs a compiled bench script (tools/cli/<entry>) as a child process with `env` added; its
 * table goes to our stderr, its stdout is returned. Killed after `timeoutMs` (a part that hangs
 * must not hold the whole report).
 */
export function runBench(
  entry: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [toolEntry(entry)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      process.stderr.write(chunk);
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${entry} exited with ${code ?? signal}`));
    });
  });
}

/** The newest reports/<prefix>*.json not in `since` (the one a part just wrote). */
export async function newestReport(prefix: string, since: ReadonlySet<string>): Promise<string> {
  const dir = path.join(ROOT, 'reports');
  const fresh = (await readdir(dir)).filter(
    (file) => file.startsWith(prefix) && file.endsWith('.json') && !since.has(file),
  );
  const file = fresh.sort().at(-1);
  if (!file) throw new Error(`no new reports/${prefix}*.json was written`);
  return readFile(path.join(dir, file), 'utf8');
}
