import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** What a user without k6 is told: the project never fetches, builds or runs k6 itself. */
export const K6_MISSING = `k6 is not on PATH (nor in $K6). The project does not install k6 (AGPL-3.0): install
your own (Grafana's k6 documentation, "Set up": packages for Debian, macOS and Windows) or set
K6=/path/to/k6, and run this again. The same scenario runs without k6 on the project's own
driver: npm run load -- <scenario>`;

/** The user's k6: $K6, else `k6` on PATH; null when there is none. */
export function findUserK6(env: Readonly<Record<string, string | undefined>>): string | null {
  const candidates = [
    env.K6,
    ...(env.PATH ?? '').split(path.delimiter).map((dir) => (dir ? path.join(dir, 'k6') : '')),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}

/**
 * Runs k6/<scenario>.js under the user's k6 with `env` (the same settings the driver reads), its
 * summary exported to `summaryFile`, no usage report and no REST API. Resolves with k6's exit
 * code (99: thresholds crossed).
 */
export function runK6(options: {
  k6: string;
  root: string;
  script: string;
  env: NodeJS.ProcessEnv;
  summaryFile: string;
  extraArgs: readonly string[];
}): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      options.k6,
      [
        'run',
        '--no-usage-report',
        '--address',
        '',
        '--summary-export',
        options.summaryFile,
        ...options.extraArgs,
        path.join(options.root, 'k6', `${options.script}.js`),
      ],
      { cwd: options.root, env: options.env, stdio: 'inherit' },
    );
    child.on('error', () => {
      resolve(2);
    });
    child.on('close', (code) => {
      resolve(code ?? 2);
    });
  });
}
