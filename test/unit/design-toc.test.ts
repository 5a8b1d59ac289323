import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const DESIGN = readFileSync(path.resolve(import.meta.dirname, '../../DESIGN.md'), 'utf8');

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

function recordHeadings(markdown: string): { num: number; title: string }[] {
  return [...markdown.matchAll(/^#{2,3} (\d+)\. (.*)$/gm)].map((m) => ({
    num: Number(m[1]),
    title: m[2] ?? '',
  }));
}

function contentsSection(markdown: string): string {
  const start = markdown.indexOf('\n## Contents\n');
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end);
}

describe('DESIGN.md as a map', () => {
  it('when its records are read in order, then they are numbered 1..N, each once', () => {
    const nums = recordHeadings(DESIGN).map((h) => h.num);
    expect(nums.length).toBeGreaterThan(0);
    expect(nums).toEqual(nums.map((_, i) => i + 1));
  });

  it('when its Parts are read in order, then they are I, II, III ... and every record is inside one', () => {
    const roman = ['I', 'II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', 'IX', 'X', 'XI', 'XII'];
    const parts = [...DESIGN.matchAll(/^## Part ([IVX]+)\. /gm)].map((m) => m[1]);
    expect(parts).toEqual(roman.slice(0, parts.length));
    expect(DESIGN.indexOf('\n### ')).toBeGreaterThan(DESIGN.indexOf('\n## Part I. '));
    expect(/^## \d+\./m.test(DESIGN)).toBe(false);
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
    expect(listed.filter((entry) => entry !== 'Old numbers')).toEqual(headings);
  });

  it('when the old numbers are mapped, then each names a record that exists, and no new number twice', () => {
    const table = DESIGN.slice(DESIGN.indexOf('\n## Old numbers\n'));
    const cells = [...table.matchAll(/\| ([0-9]+)(?: \([^)]*\))? → ([0-9]+) /g)];
    const records = new Set(recordHeadings(DESIGN).map((h) => h.num));
    const targets = cells.map((m) => Number(m[2]));
    expect(cells.length).toBeGreaterThan(80);
    expect(targets.filter((n) => !records.has(n))).toEqual([]);
    expect(new Set(targets).size).toBe(targets.length);
  });

  it('when a heading is slugged, then it follows GitHub: punctuation dropped, spaces to dashes', () => {
    expect(githubSlug('23. The hot path of POST /payments')).toBe(
      '23-the-hot-path-of-post-payments',
    );
    expect(githubSlug('54. A dead job comes back only through `dlq:replay`')).toBe(
      '54-a-dead-job-comes-back-only-through-dlqreplay',
    );
    expect(githubSlug('31. Load shedding: at most HTTP_MAX_IN_FLIGHT requests')).toBe(
      '31-load-shedding-at-most-http_max_in_flight-requests',
    );
  });
});
