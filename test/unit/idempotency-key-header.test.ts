import { describe, expect, it } from 'vitest';
import {
  IDEMPOTENCY_KEY_HEADER_MAX_LENGTH,
  IDEMPOTENCY_KEY_HEADER_PATTERN,
  parseIdempotencyKey,
} from '../../src/http/idempotency-key-header.js';

describe('parseIdempotencyKey', () => {
  it.each([
    ['abc', 'abc'],
    ['order-42_retry.1', 'order-42_retry.1'],
    ['"abc"', 'abc'],
    ['"a\\"b"', 'a"b'],
    ['x'.repeat(255), 'x'.repeat(255)],
    ['!~', '!~'],
  ])('when the header is %j, then the key is %j', (header, key) => {
    expect(parseIdempotencyKey(header)).toEqual({ ok: true, key });
  });

  it.each([[undefined], ['']])('when the header is %j, then it is missing', (header) => {
    expect(parseIdempotencyKey(header)).toEqual({ ok: false, reason: 'missing' });
  });

  it.each([
    ['x'.repeat(256)],
    ['has space'],
    ['tab\there'],
    ['ümlaut'],
    ['""'],
    ['"unterminated'],
    ['"bad\\escape"'],
    ['"has space"'],
  ])('when the header is %j, then it is invalid', (header) => {
    expect(parseIdempotencyKey(header)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('when two headers are sent, then it is invalid', () => {
    expect(parseIdempotencyKey(['a', 'b'])).toEqual({ ok: false, reason: 'invalid' });
  });
});

describe('IDEMPOTENCY_KEY_HEADER_PATTERN (the OpenAPI document)', () => {
  const samples = [
    'abc',
    '"abc"',
    '"a\\"b"',
    '"a\\\\b"',
    '"a b"',
    '""',
    '"abc',
    'ab"c',
    '"a\\x"',
    'x'.repeat(255),
    'x'.repeat(256),
    `"${'x'.repeat(255)}"`,
    `"${'x'.repeat(256)}"`,
    `"${'\\"'.repeat(255)}"`,
    'has space',
    'tab\t',
    'é',
    '~',
  ];

  it.each(samples)('when the header is %j, then the pattern agrees with the parser', (header) => {
    const accepted = parseIdempotencyKey(header).ok;
    expect(IDEMPOTENCY_KEY_HEADER_PATTERN.test(header)).toBe(accepted);
    if (accepted) expect(header.length).toBeLessThanOrEqual(IDEMPOTENCY_KEY_HEADER_MAX_LENGTH);
  });

  it('when every 1- and 2-character header is tried, then the pattern agrees with the parser', () => {
    const chars = Array.from({ length: 0x80 }, (_, i) => String.fromCharCode(i));
    for (const a of chars) {
      expect(IDEMPOTENCY_KEY_HEADER_PATTERN.test(a)).toBe(parseIdempotencyKey(a).ok);
      for (const b of chars) {
        const pair = a + b;
        expect(IDEMPOTENCY_KEY_HEADER_PATTERN.test(pair)).toBe(parseIdempotencyKey(pair).ok);
      }
    }
  });
});
