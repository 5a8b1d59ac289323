import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** Each table's writes and the one folder they may appear in (DESIGN: each resource owns its writes). */
const OWNERS: readonly { table: string; writes: RegExp; folder: string }[] = [
  { table: 'outbox', writes: /\bINSERT\s+INTO\s+outbox\b/i, folder: 'outbox' },
  {
    table: 'payments',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+payments\b/i,
    folder: 'payments',
  },
  {
    table: 'idempotency_keys',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+idempotency_keys\b/i,
    folder: 'idempotency',
  },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('writes of the shared tables', () => {
  it('appear only in the folder that owns the table (others compose its statement parts)', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(0);
    const misplaced: string[] = [];
    const found = new Set<string>();
    for (const file of files) {
      const source = readFileSync(file, 'utf8');
      const relative = path.relative(SRC, file);
      const folder = relative.split(path.sep)[0] ?? '';
      for (const { table, writes, folder: owner } of OWNERS) {
        if (!writes.test(source)) continue;
        found.add(table);
        if (folder !== owner) misplaced.push(`${relative} writes ${table} (owned by ${owner}/)`);
      }
    }
    expect(misplaced).toEqual([]);
    // The patterns still match the code: every table is written somewhere.
    expect([...found].sort()).toEqual(OWNERS.map((o) => o.table).sort());
  });
});
