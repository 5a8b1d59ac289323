import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * DESIGN.md is a map of standing decisions: records numbered by stable IDs (ascending, gaps
 * allowed), each with a Decision, Alternatives, a Reason and a Code line whose links exist, no
 * history in it, under 1,500 lines; and every "DESIGN N" the repository cites is a record of it.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const DESIGN = readFileSync(path.join(ROOT, 'DESIGN.md'), 'utf8');

/**
 * Where code, tests and docs cite records. design-history.md keeps the numbers of its time, and
 * this file's citations are examples for the parser.
 */
const CITING = ['src', 'tools', 'test', 'k6', 'scripts', 'docs', 'migrations', '.ci', 'README.md'];
const NOT_CITING = new Set(['docs/design-history.md', 'test/unit/design-toc.test.ts']);

/** GitHub's heading anchor: lowercase, punctuation dropped (not `-` or `_`), spaces to '-'. */
function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading's anchor, with GitHub's -1, -2 suffixes for repeated ones. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (inFence || !heading?.[1]) continue;
    const slug = githubSlug(heading[1]);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${String(count)}`);
  }
  return result;
}

interface DesignRecord {
  num: number;
  title: string;
  body: string;
}

/** Each `### N. Title` with its text up to the next heading of level 2 or 3. */
function designRecords(markdown: string): DesignRecord[] {
  return [...markdown.matchAll(/^### (\d+)\. (.*)\n([\s\S]*?)(?=^##{1,2} |(?![\s\S]))/gm)].map(
    (m) => ({ num: Number(m[1]), title: m[2] ?? '', body: m[3] ?? '' }),
  );
}

function contentsSection(markdown: string): string {
  const start = markdown.indexOf('\n## Contents\n');
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end);
}

/** The record's `**Code:**` paragraph. */
function codeParagraph(body: string): string | undefined {
  return /^\*\*Code:\*\*[^\n]*(?:\n(?!\n)[^\n]*)*/m.exec(body)?.[0];
}

/** Relative link targets of a markdown text: the path and the #anchor, if any. */
function relativeLinks(markdown: string): { target: string; anchor: string | undefined }[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? '')
    .filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href) && !href.startsWith('#'))
    .map((href) => {
      const [target = '', anchor] = href.split('#');
      return { target, anchor };
    });
}

/**
 * The record numbers one citation names: "DESIGN 53", "DESIGN.md 12", "DESIGN 53, 59, 106",
 * "DESIGN.md record 62", "DESIGN.md records 32-37" (a range names its two ends).
 */
function citedNumbers(text: string): number[] {
  const citation = /\bDESIGN(?:\.md)?,? (?:records? )?(\d+(?:(?:, | and |-)\d+)*)/g;
  return [...text.matchAll(citation)].flatMap((m) => (m[1] ?? '').split(/, | and |-/).map(Number));
}

function filesUnder(entry: string): string[] {
  const full = path.join(ROOT, entry);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [entry];
  return readdirSync(full).flatMap((name) =>
    name === 'node_modules' ? [] : filesUnder(path.join(entry, name)),
  );
}

describe('DESIGN.md as a map', () => {
  const records = designRecords(DESIGN);
  const numbers = new Set(records.map((r) => r.num));

  it('when its records are read in order, then their numbers ascend, each once', () => {
    const nums = records.map((r) => r.num);
    expect(nums.length).toBeGreaterThan(0);
    expect(nums.filter((n, i) => i > 0 && n <= (nums[i - 1] ?? 0))).toEqual([]);
  });

  it('when its Parts are read in order, then they are I, II, III ... and every record is inside one', () => {
    const roman = [
      'I',
      'II',
      'III',
      'IV',
      'V',
      'VI',
      'VII',
      'VIII',
      'IX',
      'X',
      'XI',
      'XII',
      'XIII',
      'XIV',
      'XV',
      'XVI',
    ];
    const parts = [...DESIGN.matchAll(/^## Part ([IVX]+)\. /gm)].map((m) => m[1]);
    expect(parts.length).toBeGreaterThan(0);
    expect(parts).toEqual(roman.slice(0, parts.length));
    expect(DESIGN.indexOf('\n### ')).toBeGreaterThan(DESIGN.indexOf('\n## Part I. '));
    expect(/^## \d+\./m.test(DESIGN)).toBe(false);
    const afterParts = DESIGN.slice(DESIGN.indexOf('\n## Part I. '));
    expect([...afterParts.matchAll(/^## (?!Part [IVX]+\. )(.*)$/gm)].map((m) => m[1])).toEqual([]);
  });

  it('when a link points inside the document, then a heading has that anchor', () => {
    const known = anchors(DESIGN);
    const links = [...DESIGN.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1] ?? '');
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((anchor) => !known.has(anchor))).toEqual([]);
  });

  it('when the contents are read, then they list every Part and record once, in order', () => {
    const listed = [...contentsSection(DESIGN).matchAll(/\[([^\]]+)\]\(#/g)].map((m) => m[1]);
    const headings = [...DESIGN.matchAll(/^(?:## (Part .*)|### (\d+\. .*))$/gm)].map(
      (m) => m[1] ?? m[2],
    );
    expect(listed).toEqual(headings);
  });

  it('when a record is read, then it has a Decision, Alternatives, a Reason and a Code line', () => {
    const incomplete = records
      .filter(
        (r) =>
          !/^\*\*Decision\.\*\* /m.test(r.body) ||
          !/^\*\*Alternatives\.\*\* /m.test(r.body) ||
          !/^\*\*Reason\.\*\* /m.test(r.body) ||
          relativeLinks(codeParagraph(r.body) ?? '').length === 0,
      )
      .map((r) => r.num);
    expect(incomplete).toEqual([]);
  });

  it("when a record's relative links are followed, then each file (and markdown anchor) exists", () => {
    const missing = records.flatMap((r) =>
      relativeLinks(r.body)
        .filter(({ target, anchor }) => {
          const file = path.join(ROOT, target);
          if (!existsSync(file)) return true;
          if (anchor === undefined || !target.endsWith('.md')) return false;
          return !anchors(readFileSync(file, 'utf8')).has(anchor);
        })
        .map(({ target, anchor }) => `${String(r.num)}: ${target}${anchor ? `#${anchor}` : ''}`),
    );
    expect(missing).toEqual([]);
  });

  it('when it is read whole, then it has fewer than 1,500 lines', () => {
    expect(DESIGN.split('\n').length).toBeLessThan(1500);
  });

  it('when a record is read, then it holds no history ("History:", "Update (")', () => {
    const withHistory = records.filter((r) => /History:|Update \(/.test(r.body)).map((r) => r.num);
    expect(withHistory).toEqual([]);
  });

  it('when a record cites another ("record N", "records N-M"), then that record exists', () => {
    const cited = [...DESIGN.matchAll(/\brecords? (\d+(?:(?:, | and |-)\d+)*)/g)].flatMap((m) =>
      (m[1] ?? '').split(/, | and |-/).map(Number),
    );
    expect(cited.length).toBeGreaterThan(0);
    expect([...new Set(cited.filter((n) => !numbers.has(n)))]).toEqual([]);
  });

  it('when code, tests or docs cite "DESIGN N", then record N exists', () => {
    const dangling = CITING.flatMap(filesUnder)
      .filter((file) => !NOT_CITING.has(file))
      .flatMap((file) => {
        const text = readFileSync(path.join(ROOT, file), 'utf8');
        if (text.includes('\u0000')) return [];
        return citedNumbers(text)
          .filter((n) => !numbers.has(n))
          .map((n) => `${file}: DESIGN ${String(n)}`);
      });
    expect([...new Set(dangling)]).toEqual([]);
  });

  it('when a citation is parsed, then single numbers, lists and ranges are read', () => {
    expect(citedNumbers('(DESIGN 53, 59, 106): x')).toEqual([53, 59, 106]);
    expect(citedNumbers('see DESIGN.md record 62 and')).toEqual([62]);
    expect(citedNumbers('DESIGN.md records 32-37.')).toEqual([32, 37]);
    expect(citedNumbers('(DESIGN 35, old 76)')).toEqual([35]);
    expect(citedNumbers('DESIGN.md 12; DESIGN record 49')).toEqual([12, 49]);
  });

  it('when a heading is slugged, then it follows GitHub: punctuation dropped, spaces to dashes', () => {
    expect(githubSlug('13. The hot path of POST /payments')).toBe(
      '13-the-hot-path-of-post-payments',
    );
    expect(githubSlug('50. A dead job comes back only through `dlq:replay`')).toBe(
      '50-a-dead-job-comes-back-only-through-dlqreplay',
    );
    expect(githubSlug('31. Load shedding: at most HTTP_MAX_IN_FLIGHT requests')).toBe(
      '31-load-shedding-at-most-http_max_in_flight-requests',
    );
  });
});
