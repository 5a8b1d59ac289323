import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
/** Business components: they may use src/http, never the other way round. */
const COMPONENTS = ['payments', 'idempotency', 'merchants', 'settlement', 'outbox', 'acquirer'];

function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [...source.matchAll(/\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g)].map(
    (match) => match[1] ?? match[2] ?? '',
  );
}

describe('src/http', () => {
  it('imports nothing from a business component (the domain does not depend on HTTP)', () => {
    const offending: string[] = [];
    const files = readdirSync(path.join(SRC, 'http')).filter((name) => name.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) {
      const file = path.join(SRC, 'http', name);
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = path.relative(SRC, path.resolve(path.dirname(file), specifier));
        const top = target.split(path.sep)[0] ?? '';
        if (COMPONENTS.includes(top)) offending.push(`${name} -> ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });
});
