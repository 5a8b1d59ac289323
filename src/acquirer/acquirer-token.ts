import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../platform/telemetry/logger.js';

/**
 * The acquirer role's check of its callers' bearer token (ACQUIRER_TOKEN, DESIGN 121). The
 * comparison is constant-time: both sides are hashed to 32 bytes first, so neither the token's
 * length nor a common prefix shows in the time taken. Refusals are logged one line per burst:
 * the first, then at most one per interval with the number not logged in between, so a
 * misconfigured settlement fleet costs a few lines, not one per call.
 */
export interface TokenCheck {
  /** Whether the request carries the token (`Authorization: Bearer <token>`). */
  allows(headers: IncomingHttpHeaders): boolean;
}

export function createTokenCheck(
  token: string,
  logger: Logger,
  intervalMs: number,
  now: () => number = Date.now,
): TokenCheck {
  const expected = digest(token);
  let lastLineAt: number | null = null;
  let unlogged = 0;

  const refused = (reason: string) => {
    const at = now();
    if (lastLineAt !== null && at - lastLineAt < intervalMs) {
      unlogged++;
      return;
    }
    logger.warn(
      { reason, refused_since_last_line: unlogged + 1 },
      'acquirer refused a call without the right bearer token (401): check ACQUIRER_TOKEN on both sides',
    );
    lastLineAt = at;
    unlogged = 0;
  };

  return {
    allows(headers) {
      const match = /^Bearer ([\x21-\x7e]+)$/i.exec(headers.authorization ?? '');
      if (!match?.[1]) {
        refused(headers.authorization === undefined ? 'missing' : 'malformed');
        return false;
      }
      if (!timingSafeEqual(digest(match[1]), expected)) {
        refused('wrong token');
        return false;
      }
      return true;
    },
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
