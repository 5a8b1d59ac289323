import { describe, expect, it } from 'vitest';
import { parseIdempotencyKey } from '../../src/idempotency/idempotency-key-header.js';

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
