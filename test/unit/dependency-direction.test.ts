import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph as importGraphOf, sourceFiles } from '../support/import-graph.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A folder of folders as layers: its table of layers, and where else its files may import. */
interface LayeredTree {
  /** The tree, relative to the repository. */
  dir: string;
  /** The markdown file whose table gives each folder of the tree its layer. */
  map: string;
  /** Folders outside the tree (relative to the repository) its files may import from. */
  outside: readonly string[];
}

const SRC: LayeredTree = { dir: 'src', map: 'docs/architecture.md', outside: [] };
/** Tools may import src/ (and the k6 scenarios the load driver runs); src/ never imports tools/. */
const TOOLS: LayeredTree = { dir: 'tools', map: 'tools/README.md', outside: ['src', 'k6'] };

/** No file of src/ or tools/ is longer than this; a longer one is split by what it does. */
const MAX_LINES = 300;

/** The layer of each folder of a tree, read from the table of its map. */
function layersFromMap({ map }: LayeredTree): Map<string, number> {
  const layers = new Map<string, number>();
  const text = readFileSync(path.join(ROOT, map), 'utf8');
  for (const [, layer = '', folder = ''] of text.matchAll(
    /^\|\s*(\d+)\s*\|\s*`([\w-]+)\/`\s*\|/gm,
  )) {
    if (layers.has(folder)) throw new Error(`${map} lists ${folder}/ twice`);
    layers.set(folder, Number(layer));
  }
  return layers;
}

const foldersOf = (dir: string) =>
  readdirSync(dir).filter((name) => statSync(path.join(dir, name)).isDirectory());

const importGraph = ({ dir }: LayeredTree) => importGraphOf(path.join(ROOT, dir));

const folderOf = (file: string) => file.split(path.sep)[0] ?? '';

/** The imports that break the layers: to a higher layer, a sibling, or outside where not allowed. */
function layerViolations(
  graph: Map<string, string[]>,
  layers: Map<string, number>,
  { dir, outside }: LayeredTree,
): string[] {
  const offending: string[] = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    for (const target of targets) {
      if (target.startsWith('..')) {
        const repoPath = path.join(dir, target);
        if (!outside.includes(folderOf(repoPath))) offending.push(`${file} -> ${repoPath}`);
        continue;
      }
      const to = folderOf(target);
      if (to === from) continue;
      const [fromLayer, toLayer] = [layers.get(from) ?? -1, layers.get(to) ?? -1];
      if (toLayer >= fromLayer) {
        offending.push(`${file} (layer ${fromLayer}) -> ${target} (layer ${toLayer})`);
      }
    }
  }
  return offending;
}

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

/** Each file of the tree longer than `max` lines, with its length. */
function filesOver(max: number, { dir }: LayeredTree): string[] {
  return sourceFiles(path.join(ROOT, dir))
    .map((file) => ({ file, lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > max)
    .map(({ file, lines }) => `${path.relative(ROOT, file)}: ${lines} lines`);
}

describe(`the folders of src/ as the layers of ${SRC.map}`, () => {
  const layers = layersFromMap(SRC);
  const graph = importGraph(SRC);
  const src = path.join(ROOT, SRC.dir);

  it('when src/ is listed, then every folder has exactly one row and every row is a folder', () => {
    expect([...layers.keys()].sort()).toEqual(foldersOf(src).sort());
    expect(readdirSync(src).filter((name) => name.endsWith('.ts'))).toEqual([]);
  });

  it('when a file imports another folder, then that folder is on a lower layer (never higher, never a sibling)', () => {
    expect(layerViolations(graph, layers, SRC)).toEqual([]);
  });

  it('when the imports of src/ are followed, then none leads back to where it started', () => {
    expect(circles(graph).map((circle) => circle.join(' <-> '))).toEqual([]);
  });

  it(`when a file of src/ is measured, then it has at most ${MAX_LINES} lines`, () => {
    expect(filesOver(MAX_LINES, SRC)).toEqual([]);
  });
});

describe(`the folders of tools/ as the layers of ${TOOLS.map}`, () => {
  const layers = layersFromMap(TOOLS);
  const graph = importGraph(TOOLS);
  const tools = path.join(ROOT, TOOLS.dir);

  it('when tools/ is listed, then every folder has exactly one row and every row is a folder', () => {
    expect([...layers.keys()].sort()).toEqual(foldersOf(tools).sort());
    expect(readdirSync(tools).filter((name) => name.endsWith('.ts'))).toEqual([]);
  });

  it('when a file imports another folder, then it is a lower layer of tools/, or src/ (or k6/)', () => {
    expect(layerViolations(graph, layers, TOOLS)).toEqual([]);
  });

  it('when the imports of tools/ are followed, then none leads back to where it started', () => {
    expect(circles(graph).map((circle) => circle.join(' <-> '))).toEqual([]);
  });

  it(`when a file of tools/ is measured, then it has at most ${MAX_LINES} lines`, () => {
    expect(filesOver(MAX_LINES, TOOLS)).toEqual([]);
  });
});
