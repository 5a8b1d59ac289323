import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph } from '../support/import-graph.js';

/**
 * A POST's trail, counted from the imports (docs/architecture.md, "A POST /payments, step by
 * step"): the files reachable from the route's file through their imports, types included, and
 * where the trail enters each folder. A folder is entered through a door: an import into it from
 * another folder. Every folder the trail reaches, but platform/ (which every folder uses to
 * connect), has one door: the one folder that hands the request down to it. A second door is a
 * walk that leaves a folder and comes back to it from elsewhere.
 */
const SRC = path.resolve(import.meta.dirname, '../../src');
const ROUTES = [
  'payments/payments-router.ts',
  'refunds/refunds-router.ts',
  'webhooks/webhooks-router.ts',
];
const SHARED_BY_ALL = 'platform';

const folderOf = (file: string) => file.split(path.sep)[0] ?? '';

/** Each folder the trail from `entry` reaches, and the folders whose imports lead into it. */
function doors(graph: Map<string, string[]>, entry: string): Map<string, Set<string>> {
  const into = new Map<string, Set<string>>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const target of graph.get(file) ?? []) {
      const [from, to] = [folderOf(file), folderOf(target)];
      if (from !== to) into.set(to, (into.get(to) ?? new Set()).add(from));
      visit(target);
    }
  };
  visit(entry);
  return into;
}

describe("a creating POST's trail through the folders of src/", () => {
  const graph = importGraph(SRC);

  for (const route of ROUTES) {
    it(`when ${route}'s imports are followed, then each folder but ${SHARED_BY_ALL}/ is entered through one door`, () => {
      const entered = doors(graph, route);
      const twice = [...entered]
        .filter(([folder, from]) => folder !== SHARED_BY_ALL && from.size > 1)
        .map(([folder, from]) => `${folder}/ from ${[...from].sort().join(', ')}`);
      expect(entered.size).toBeGreaterThan(3);
      expect(twice).toEqual([]);
    });
  }
});
