import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/**
 * SHA-256 of the method, the path and the canonical JSON of the validated body (defaults
 * applied). Same key + same fingerprint = replay; same key + other fingerprint = 422.
 */
export function requestFingerprint(method: string, path: string, validatedBody: unknown): Buffer {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(validatedBody)}`)
    .digest();
}
