import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
}

const lock = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../package-lock.json'), 'utf8'),
) as { packages: Record<string, LockEntry> };

describe('package-lock.json', () => {
  // `npm ci` refuses a lock that omits an optional dependency, even one for another platform.
  // The registry this project is developed against lacks some platforms' binaries (squawk-cli's
  // darwin and win32 builds), so `npm install` here drops their entries and CI's `npm ci` fails.
  // Their entries are kept by hand (version, os, cpu; npm fetches them by name on that platform).
  it('when a package has optional dependencies, then the lock has an entry for each one', () => {
    const missing: string[] = [];
    for (const [location, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        const nested = `${location}/node_modules/${name}`;
        if (!(nested in lock.packages) && !(`node_modules/${name}` in lock.packages)) {
          missing.push(`${name} (optional dependency of ${location || 'the root'})`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
