import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/**
 * Each table's writes and the folders they may appear in (DESIGN: each resource owns its
 * writes). The webhook tables belong to src/webhooks/: its fan-out (webhook-fanout.ts, a
 * companion of the outbox writer's statement) stores a result event with its outbox row and fans
 * it out to its deliveries and their jobs; src/webhooks/ moves deliveries (worker, retry,
 * replay) and deletes old events; the job engine (src/jobs/) moves the jobs through its
 * table-generic statements.
 */
const OWNERS: readonly { table: string; writes: RegExp; folders: readonly string[] }[] = [
  { table: 'outbox', writes: /\bINSERT\s+INTO\s+outbox\b/i, folders: ['outbox'] },
  {
    table: 'payments',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+payments\b/i,
    folders: ['payments'],
  },
  {
    table: 'idempotency_keys',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+idempotency_keys\b/i,
    folders: ['idempotency'],
  },
  {
    table: 'webhook_events',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+webhook_events\b/i,
    folders: ['webhooks'],
  },
  {
    table: 'webhook_deliveries',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+webhook_deliveries\b/i,
    folders: ['webhooks'],
  },
  {
    table: 'webhook_delivery_jobs',
    writes: /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+webhook_delivery_jobs\b/i,
    folders: ['webhooks', 'jobs'],
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
      for (const { table, writes, folders } of OWNERS) {
        if (!writes.test(source)) continue;
        found.add(table);
        if (!folders.includes(folder)) {
          misplaced.push(`${relative} writes ${table} (only ${folders.join('/, ')}/ may)`);
        }
      }
    }
    expect(misplaced).toEqual([]);
    // The patterns still match the code: every table is written somewhere.
    expect([...found].sort()).toEqual([...new Set(OWNERS.map((o) => o.table))].sort());
  });
});
