import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout this tool belongs to: the nearest folder above this file holding package.json,
 * so the compiled file finds it wherever the build puts it.
 */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('chaos: no package.json above this file');
    dir = parent;
  }
  return dir;
}

/** The compiled programs chaos runs (`npm run build` output). One place to follow a move. */
export const ENTRY_POINTS = {
  role: (role: string) => path.join('dist', 'apps', role, 'main.js'),
  migrate: path.join('dist', 'cli', 'migrate.js'),
  merchantCreate: path.join('dist', 'cli', 'merchant-create.js'),
  merchantTier: path.join('dist', 'cli', 'merchant-tier.js'),
  verify: path.join('dist-tools', 'tools', 'cli', 'verify.js'),
  /** The project's load driver (tools/cli/load.ts): the chaos run's load. */
  load: path.join('dist-tools', 'tools', 'cli', 'load.js'),
} as const;
