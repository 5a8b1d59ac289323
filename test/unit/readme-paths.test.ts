import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * README.md is a map, so every place it names must exist: each relative link (and its
 * #anchor, when it points into a markdown page), each path under a top-level folder of the
 * repository, each file or folder a "Where things are" row names inside its folder; and every
 * folder of src/ has its row. The pages of docs/ are held to the same links rule, as README
 * sends readers there and they link each other.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The top-level folders whose paths README names in prose and commands. */
const ROOTS = ['src', 'docs', 'test', 'tools', 'migrations', 'k6', 'ops', 'scripts', '.ci'];

const withoutFences = (markdown: string) => markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');

/** GitHub's anchor of every heading of a markdown file (fenced code blocks aside). */
function anchorsOf(file: string): Set<string> {
  return new Set(
    [...withoutFences(read(file)).matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      (m[1] ?? '')
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

/** Relative link targets of a markdown file, as repository paths, with their anchor. */
function relativeLinks(file: string): { target: string; anchor: string | undefined }[] {
  const text = read(file);
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? '')
    .filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href))
    .map((href) => {
      const [target = '', anchor] = href.split('#');
      const resolved = target === '' ? file : path.join(path.dirname(file), target);
      return { target: path.normalize(resolved), anchor };
    });
}

function missingLinks(file: string): string[] {
  const missing: string[] = [];
  for (const { target, anchor } of relativeLinks(file)) {
    if (!existsSync(path.join(ROOT, target))) {
      missing.push(target);
    } else if (anchor !== undefined && target.endsWith('.md') && !anchorsOf(target).has(anchor)) {
      missing.push(`${target}#${anchor}`);
    }
  }
  return missing;
}

/** Every `src/...`, `docs/...` (and so on) path README mentions, placeholders cut off. */
function namedPaths(readme: string): string[] {
  const pattern = new RegExp(
    `(?<![\\w./:-])((?:${ROOTS.map((r) => r.replace('.', '\\.')).join('|')})/[\\w./-]*)`,
    'g',
  );
  return [...new Set([...readme.matchAll(pattern)].map((m) => (m[1] ?? '').replace(/\.$/, '')))];
}

/** Rows of the "Where things are" table: the folder, and the code spans of its other cells. */
function folderRows(readme: string): { folder: string; spans: string[] }[] {
  return [...readme.matchAll(/^\| `([^`]+\/)` +\|(.*)\|$/gm)].map((m) => ({
    folder: m[1] ?? '',
    spans: [...(m[2] ?? '').matchAll(/`([^`]+)`/g)].map((s) => s[1] ?? ''),
  }));
}

const looksLikePath = (span: string) => span.endsWith('/') || /\.[a-z]{2,4}$/.test(span);

describe('README.md names only what exists', () => {
  const readme = read('README.md');

  it('when its relative links are followed, then each file and anchor exists', () => {
    expect(relativeLinks('README.md').length).toBeGreaterThan(5);
    expect(missingLinks('README.md')).toEqual([]);
  });

  it('when it names a path under a top-level folder, then that path exists', () => {
    const named = namedPaths(readme);
    expect(named).toContain('src/payments/');
    expect(named.filter((name) => !existsSync(path.join(ROOT, name)))).toEqual([]);
  });

  it('when a folder row names files or folders, then they exist inside that folder', () => {
    const rows = folderRows(readme);
    expect(rows.map((row) => row.folder)).toContain('ops/');
    const missing = rows.flatMap(({ folder, spans }) =>
      spans
        .filter(looksLikePath)
        .map((span) => path.join(folder, span))
        .filter((name) => !existsSync(path.join(ROOT, name))),
    );
    expect(missing).toEqual([]);
  });

  it('when src/ is listed, then every folder in it has a row', () => {
    const rows = new Set(folderRows(readme).map((row) => row.folder));
    const folders = readdirSync(path.join(ROOT, 'src')).filter((name) =>
      statSync(path.join(ROOT, 'src', name)).isDirectory(),
    );
    expect(folders.filter((name) => !rows.has(`src/${name}/`))).toEqual([]);
  });
});

describe('docs/ pages (and tools/README.md) link only to what exists', () => {
  const pages = [
    ...readdirSync(path.join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
    'tools/README.md',
  ];

  it.each(pages)('when %s is read, then each relative link and anchor exists', (page) => {
    expect(missingLinks(page)).toEqual([]);
  });
});
