import { describe, expect, it } from 'vitest';
import { percentile } from '../../tools/support/percentile.js';

describe('percentile (nearest rank)', () => {
  it('when there are no samples, then it throws instead of inventing a figure', () => {
    expect(() => percentile([], 50)).toThrow(RangeError);
  });

  it('when p is outside (0, 100], then it throws', () => {
    expect(() => percentile([1], 0)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it('when asked for p, then it returns the smallest sample with at least p% at or below it', () => {
    const sorted = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 51)).toBe(60);
    expect(percentile(sorted, 95)).toBe(100);
    expect(percentile(sorted, 10)).toBe(10);
    expect(percentile(sorted, 1)).toBe(10);
    expect(percentile(sorted, 100)).toBe(100);
  });

  it('when there is one sample, then every percentile is that sample', () => {
    expect(percentile([7], 1)).toBe(7);
    expect(percentile([7], 99)).toBe(7);
  });

  it('when the rank falls between samples, then it rounds up to a sample, never interpolates', () => {
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    expect(percentile([1, 2, 3], 50)).toBe(2);
    expect(percentile([1, 2], 50)).toBe(1);
  });
});
