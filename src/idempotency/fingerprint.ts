import { createHash } from 'node:crypto';

/**
 * SHA-256 of the method, the path and the canonical JSON of the validated body (defaults
 * applied). Same key + same fingerprint = replay; same key + other fingerprint = 422.
 */
export function requestFingerprint(method: string, path: string, validatedBody: unknown): Buffer {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(validatedBody)}`)
    .digest();
}

/**
 * JSON with object keys sorted at every depth and no whitespace, so two bodies that differ only
 * in key order or formatting serialize to the same string. Arrays keep their order (it matters).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
