/** Visible ASCII (0x21-0x7E), 1 to 255 characters: what the brief allows as a key. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** A structured-field string (RFC 8941 sf-string): `"` ... `"` with `\"` and `\\` escapes. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/**
 * Exactly the header values `parseIdempotencyKey` accepts, as one pattern for the OpenAPI
 * document: a bare key that does not start with `"`, or a quoted structured-field string whose
 * unescaped content is 1-255 visible ASCII characters (each branch of the group is one of them).
 */
export const IDEMPOTENCY_KEY_HEADER_PATTERN =
  /^(?:[\x21\x23-\x7e][\x21-\x7e]{0,254}|"(?:[\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255}")$/;

/** The longest accepted header: 255 characters, each escaped, between quotes. */
export const IDEMPOTENCY_KEY_HEADER_MAX_LENGTH = 2 + 2 * 255;

export type ParsedKey = { ok: true; key: string } | { ok: false; reason: 'missing' | 'invalid' };

/**
 * Parses the Idempotency-Key header. The quoted structured-field form `"abc"` is accepted and
 * means `abc` (the IETF draft defines the header as an sf-string; most clients send it bare).
 */
export function parseIdempotencyKey(header: string | string[] | undefined): ParsedKey {
  if (header === undefined) return { ok: false, reason: 'missing' };
  // Two Idempotency-Key headers are ambiguous: refuse rather than pick one.
  if (Array.isArray(header)) return { ok: false, reason: 'invalid' };
  if (header === '') return { ok: false, reason: 'missing' };
  // A leading quote announces the structured-field form; it must then be a well-formed one.
  if (header.startsWith('"')) {
    const quoted = SF_STRING.exec(header);
    if (!quoted) return { ok: false, reason: 'invalid' };
    const key = (quoted[1] ?? '').replace(/\\(["\\])/g, '$1');
    return KEY_PATTERN.test(key) ? { ok: true, key } : { ok: false, reason: 'invalid' };
  }
  return KEY_PATTERN.test(header) ? { ok: true, key: header } : { ok: false, reason: 'invalid' };
}
