import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
const MAP = 'docs/architecture.md';

/** The layer of each folder of src/, read from the table of docs/architecture.md. */
function layersFromMap(): Map<string, number> {
  const layers = new Map<string, number>();
  const text = readFileSync(path.join(ROOT, MAP), 'utf8');
  for (const [, layer = '', folder = ''] of text.matchAll(
    /^\|\s*(\d+)\s*\|\s*`([\w-]+)\/`\s*\|/gm,
  )) {
    if (layers.has(folder)) throw new Error(`${MAP} lists ${folder}/ twice`);
    layers.set(folder, Number(layer));
  }
  return layers;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return name.endsWith('.ts') ? [file] : [];
  });
}

/** Each file of src/ (relative to it) and the files of src/ it imports, types and re-exports included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => {
        const target = path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts'));
        if (!existsSync(target)) throw new Error(`${file} imports ${specifier}: no such file`);
        return path.relative(SRC, target);
      });
    graph.set(path.relative(SRC, file), targets);
  }
  return graph;
}

const folderOf = (file: string) => file.split(path.sep)[0] ?? '';

/** The circles of the graph: its strongly connected components of more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) ?? 0);
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (stack.includes(target)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member !== undefined) component.push(member);
    } while (member !== undefined && member !== file);
    const importsItself = graph.get(file)?.includes(file) ?? false;
    if (component.length > 1 || importsItself) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe(`the folders of src/ as the layers of ${MAP}`, () => {
  const layers = layersFromMap();
  const graph = importGraph();

  it('when src/ is listed, then every folder has exactly one row and every row is a folder', () => {
    const folders = readdirSync(SRC).filter((name) => statSync(path.join(SRC, name)).isDirectory());
    expect([...layers.keys()].sort()).toEqual(folders.sort());
    expect(readdirSync(SRC).filter((name) => name.endsWith('.ts'))).toEqual([]);
  });

  it('when a file imports another folder, then that folder is on a lower layer (never higher, never a sibling)', () => {
    const offending: string[] = [];
    for (const [file, targets] of graph) {
      const from = folderOf(file);
      for (const target of targets) {
        const to = folderOf(target);
        if (to === from) continue;
        const [fromLayer, toLayer] = [layers.get(from) ?? -1, layers.get(to) ?? -1];
        if (toLayer >= fromLayer) {
          offending.push(`${file} (layer ${fromLayer}) -> ${target} (layer ${toLayer})`);
        }
      }
    }
    expect(offending).toEqual([]);
  });

  it('when the imports of src/ are followed, then none leads back to where it started', () => {
    expect(circles(graph).map((circle) => circle.join(' <-> '))).toEqual([]);
  });
});
