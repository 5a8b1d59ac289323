import { describe, expect, it } from 'vitest';
import {
  decodeCachedResponse,
  encodeCachedResponse,
} from '../../src/idempotency/response-cache.js';
import type { StoredResponse } from '../../src/idempotency/stored-response.js';

const now = Date.parse('2026-01-01T00:00:00Z');
const base: StoredResponse = {
  fingerprint: 'cd'.repeat(32),
  status: 202,
  body: '{"a":"spaces and\\nnewlines","b":"\u00e9\u20ac"}\n{"second line":1}',
  expiresAt: new Date(now + 1_000),
};

describe('cached response entries', () => {
  it.each([
    ['a payment', { ...base, paymentId: '0190a6e2-7f6a-7d3c-8a4b-123456789abc' }],
    [
      'a refund',
      {
        ...base,
        paymentId: '0190a6e2-7f6a-7d3c-8a4b-123456789abc',
        refundId: '0190a6e2-7f6a-7d3c-8a4b-cba987654321',
      },
    ],
    ['no resource (a webhook endpoint)', base],
    ['an empty body', { ...base, body: '' }],
  ])('when %s is cached, then it reads back identical', (_name, response: StoredResponse) => {
    expect(decodeCachedResponse(encodeCachedResponse(response), now)).toEqual(response);
  });

  it('when an entry has expired, then it reads as a miss', () => {
    expect(decodeCachedResponse(encodeCachedResponse(base), now + 1_000)).toBeNull();
  });

  it.each([
    ['JSON of an older format', '{"fingerprint":"cd","status":202,"body":"{}","expiresAtMs":1}'],
    ['a header without its body line', `202 ${now + 1_000} cd  `],
    ['a header with a field missing', `202 ${now + 1_000} cd \n{}`],
    ['a status that is not a number', `two ${now + 1_000} cd  \n{}`],
  ])('when the entry is %s, then it reads as a miss', (_name, raw) => {
    expect(decodeCachedResponse(raw, now)).toBeNull();
  });
});
