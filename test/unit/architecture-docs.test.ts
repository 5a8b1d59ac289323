import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const ARCHITECTURE = read('docs/architecture.md');
const README = read('README.md');

const foldersOf = (dir: string) =>
  readdirSync(dir)
    .filter((name) => statSync(path.join(dir, name)).isDirectory())
    .sort();

/** The backticked names of a markdown table row that starts with `cell`. */
function namesInRow(markdown: string, cell: string): string[] {
  const start = `| ${cell} |`;
  const row = markdown
    .split('\n')
    .map((line) => line.replace(/ +/g, ' '))
    .find((line) => line.startsWith(start));
  if (row === undefined) throw new Error(`no row ${cell}`);
  const text = row.slice(start.length);
  return [...text.matchAll(/`([\w:/-]+)`/g)].map((m) => m[1] ?? '');
}

/** The src/ folder rows of the layer table: folder -> layer. */
function layerRows(): Map<string, number> {
  return new Map(
    [...ARCHITECTURE.matchAll(/^\|\s*(\d+)\s*\|\s*`([\w-]+)\/`\s*\|/gm)].map((m) => [
      m[2] ?? '',
      Number(m[1]),
    ]),
  );
}

/** Words that name a feature: a mechanism folder holds no file named with one. */
const FEATURES = /payment|refund|settlement|webhook|merchant/;
const MECHANISMS = ['outbox', 'http', 'jobs', 'platform'];
/** Argued in docs/architecture.md: the one configuration schema has a section per concern. */
const ALLOWED = ['platform/config/webhook-settings.ts'];

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(SRC, dir)).flatMap((name) => {
    const relative = path.join(dir, name);
    return statSync(path.join(SRC, relative)).isDirectory() ? filesUnder(relative) : [relative];
  });
}

describe('docs/architecture.md and README.md describe the tree as it is', () => {
  it('when the folders and layers of src/ are counted, then the page says those numbers', () => {
    const layers = layerRows();
    const sentence = /The service is (\d+) folders under `src\/`, stacked in (\d+) layers/.exec(
      ARCHITECTURE,
    );
    expect(sentence?.slice(1).map(Number)).toEqual([
      foldersOf(SRC).length,
      new Set(layers.values()).size,
    ]);
  });

  it('when src/apps/ is listed, then both pages name every role folder and nothing else', () => {
    const roles = foldersOf(path.join(SRC, 'apps'));
    expect(namesInRow(ARCHITECTURE, '6 | `apps/`').sort()).toEqual(roles);
    expect(namesInRow(README, '`src/apps/`').sort()).toEqual(roles);
  });

  it("when README's table lists src/, then its rows are exactly the folders", () => {
    const rows = [...README.matchAll(/^\| `src\/([\w-]+)\/`/gm)].map((m) => m[1]).sort();
    expect(rows).toEqual(foldersOf(SRC));
  });

  it('when platform/ is listed, then its sub-folders are the rows and it holds no loose file', () => {
    const platform = path.join(SRC, 'platform');
    const rows = [...ARCHITECTURE.matchAll(/^\| `([\w-]+)\/`\s+\|/gm)].map((m) => m[1]);
    expect(rows.filter((row) => row !== undefined && !layerRows().has(row)).sort()).toEqual(
      foldersOf(platform),
    );
    expect(readdirSync(platform).filter((name) => name.endsWith('.ts'))).toEqual([]);
    expect(
      namesInRow(README, '`src/platform/`')
        .map((name) => name.replace(/\/$/, ''))
        .sort(),
    ).toEqual(foldersOf(platform));
  });

  it('when the mechanism folders are read, then no file is named after a feature', () => {
    const named = MECHANISMS.flatMap(filesUnder).filter(
      (file) => FEATURES.test(path.basename(file)) && !ALLOWED.includes(file),
    );
    expect(named).toEqual([]);
  });
});
