import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The .ts files under `dir`, at any depth. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return name.endsWith('.ts') ? [file] : [];
  });
}

/** The file a relative import names: its TypeScript source, or the file itself (k6's .js). */
function resolveImport(file: string, specifier: string): string {
  const named = path.resolve(path.dirname(file), specifier);
  const source = named.replace(/\.js$/, '.ts');
  if (existsSync(source)) return source;
  if (existsSync(named)) return named;
  throw new Error(`${file} imports ${specifier}: no such file`);
}

/**
 * Each file of the tree at `tree` (relative to it) and the files it imports, in the order its
 * source names them, types and re-exports included; a file outside the tree is named relative
 * to the tree too (`../src/...`).
 */
export function importGraph(tree: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(tree)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => path.relative(tree, resolveImport(file, specifier)));
    graph.set(path.relative(tree, file), targets);
  }
  return graph;
}
