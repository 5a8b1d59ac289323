import { describe, expect, it } from 'vitest';
import { canonicalJson, requestFingerprint } from '../../src/idempotency/fingerprint.js';

describe('canonicalJson', () => {
  it('when keys differ only in order at any depth, then the output is the same', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: 'x' } })).toBe(
      canonicalJson({ a: { c: 'x', d: [2, 1] }, b: 1 }),
    );
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
  });

  it('when array order differs, then the output differs', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it('when a value is undefined, then the key is left out like JSON.stringify does', () => {
    expect(canonicalJson({ a: undefined, b: null })).toBe('{"b":null}');
  });
});

describe('requestFingerprint', () => {
  const body = { amount: 100, currency: 'EUR' };
  it('when method, path and canonical body match, then the fingerprints are equal', () => {
    expect(requestFingerprint('post', '/payments', body)).toEqual(
      requestFingerprint('POST', '/payments', { currency: 'EUR', amount: 100 }),
    );
  });

  it('when the amount, the path or the method differs, then the fingerprint differs', () => {
    const base = requestFingerprint('POST', '/payments', body);
    expect(requestFingerprint('POST', '/payments', { ...body, amount: 101 })).not.toEqual(base);
    expect(requestFingerprint('POST', '/refunds', body)).not.toEqual(base);
    expect(requestFingerprint('PUT', '/payments', body)).not.toEqual(base);
  });
});
