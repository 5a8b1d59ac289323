import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, createWriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Finds k6 the way k6/run.sh does: $K6, .stack/bin/k6, ~/go/bin/k6, then PATH. */
export function findK6(root: string): string {
  const candidates = [
    process.env.K6,
    path.join(root, '.stack', 'bin', 'k6'),
    path.join(os.homedir(), 'go', 'bin', 'k6'),
    ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'k6')),
  ];
  for (const candidate of candidates) {
    if (candidate === undefined || candidate === '') continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not this one.
    }
  }
  throw new Error('k6 not found: run scripts/install-k6.sh (npm run k6:install), or set K6');
}

export interface K6Script {
  /** k6/<script>.js */
  script: 'storm' | 'mix' | 'refund-storm';
  env: Record<string, string>;
  /** Per-request samples (CSV, millisecond times) and the end-of-test summary. */
  csvPath: string;
  summaryPath: string;
  outputPath: string;
}

export interface RunningK6 {
  script: K6Script;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/**
 * Starts one k6 script. Its thresholds encode the normal-day objectives, so under faults k6
 * often exits 99 (thresholds crossed): the caller reads the samples instead of the exit code.
 */
export function startK6(k6: string, root: string, script: K6Script): RunningK6 {
  const output = createWriteStream(script.outputPath);
  const child = spawn(
    k6,
    [
      'run',
      '--no-usage-report',
      '--address',
      '',
      '--quiet',
      '--summary-export',
      script.summaryPath,
      '--out',
      `csv=${script.csvPath}`,
      path.join('k6', `${script.script}.js`),
    ],
    {
      cwd: root,
      env: { ...process.env, ...script.env, K6_CSV_TIME_FORMAT: 'unix_milli' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // Both streams into one file: neither may end it (the other would write after its end and
  // crash the run); it ends once the child's streams are closed.
  child.stdout.pipe(output, { end: false });
  child.stderr.pipe(output, { end: false });
  child.on('close', () => output.end());
  const exited = new Promise<number | null>((resolve) => {
    child.on('error', () => {
      resolve(null);
    });
    child.on('close', (code) => {
      resolve(code);
    });
  });
  return { script, child, exited };
}
