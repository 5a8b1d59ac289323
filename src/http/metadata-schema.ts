import { z } from 'zod';
import { ApiError } from './api-error.js';
import { codePoints } from './code-points.js';

/**
 * The text and metadata rules every resource's request shares (payments, refunds): one schema,
 * so the same input gets the same answer, with the same messages, on every route.
 */

export const MAX_METADATA_KEYS = 20;

/**
 * Text Postgres can store: no NUL (text and jsonb refuse it). The pattern goes into the OpenAPI
 * document as is.
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this pattern excludes
const NO_NUL = /^[^\u0000]*$/;

/**
 * Unicode text (I-JSON, RFC 7493): no unpaired surrogate, which Postgres would store as U+FFFD or
 * refuse. With the `u` flag a valid pair is one code point outside the class and a lone surrogate
 * one inside it. Not in the document: JSON Schema validators built on Rust or Go regexes cannot
 * compile surrogate ranges, so the document says it in words.
 */
const NO_LONE_SURROGATE = /^[^\uD800-\uDFFF]*$/u;

/**
 * A string of `min` to `max` characters without NUL or unpaired surrogates. The bounds count code
 * points like the database's length() and the document's minLength/maxLength, so an emoji is one.
 * `noun` starts each message ("keys must ..."); without it the message starts with "must".
 */
export function unicodeText(min: number, max: number, noun?: string) {
  const must = noun ? `${noun} must` : 'must';
  let schema = z
    .string({ error: noun ? `${noun} must be strings` : 'must be a string' })
    .regex(NO_NUL, `${must} not contain NUL characters`)
    .refine((value) => NO_LONE_SURROGATE.test(value), `${must} not contain unpaired surrogates`);
  if (min > 0) schema = schema.refine((value) => codePoints(value) >= min, `${must} not be empty`);
  return schema
    .refine((value) => codePoints(value) <= max, `${must} be at most ${max} characters`)
    .meta({
      ...(min > 0 ? { minLength: min } : {}),
      maxLength: max,
      description: 'Unicode text (RFC 7493): no NUL, no unpaired surrogates.',
    });
}

/**
 * Keys an object literal treats specially. `__proto__` cannot be kept (assigning it sets the
 * prototype, so the key would vanish from the stored metadata); it is refused, never dropped.
 */
const RESERVED_METADATA_KEY = /^(?!__proto__$)/;

/** Metadata: up to 20 keys of 1-40 characters, values of up to 500, all Unicode text. */
export const metadataSchema = z
  .record(
    unicodeText(1, 40, 'keys').regex(RESERVED_METADATA_KEY, 'keys must not be __proto__'),
    unicodeText(0, 500, 'values'),
  )
  .refine((value) => Object.keys(value).length <= MAX_METADATA_KEYS, {
    message: `must have at most ${MAX_METADATA_KEYS} keys`,
  })
  .meta({ maxProperties: MAX_METADATA_KEYS });

/**
 * JSON.parse keeps a `__proto__` key as an own property, but zod's record parser skips it, so
 * it would vanish from the stored metadata (and the fingerprint). Refused, never dropped: call
 * before validating a body whose `metadata` is metadataSchema.
 */
export function refuseReservedMetadataKeys(body: unknown): void {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, 'metadata')) return;
  const metadata = (body as { metadata: unknown }).metadata;
  if (typeof metadata === 'object' && metadata !== null && Object.hasOwn(metadata, '__proto__')) {
    throw new ApiError('validation_failed', 'The request has invalid fields; see errors.', {
      errors: [{ path: 'metadata.__proto__', message: 'keys must not be __proto__' }],
    });
  }
}
