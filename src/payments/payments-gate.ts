import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Authenticator } from '../merchants/authenticator.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { rateLimitHeaders } from '../rate-limits/rate-limit-headers.js';
import type { RateLimit, RatePolicy } from '../rate-limits/rate-limiter.js';
import { ApiError } from '../http/api-error.js';

export interface PaymentsGateDeps {
  authenticator: Authenticator;
  rateLimit: RateLimit;
  /** The bucket of a client address for lookups of keys this process has not verified. */
  unauthenticatedPolicy: RatePolicy;
}

/** `Bearer <key>`: the scheme case-insensitive, one or more spaces before the key (RFC 9110 section 11.1, `1*SP`). */
const BEARER = /^bearer +([\x21-\x7e]{1,200})$/i;

/**
 * Authentication and rate limits in front of every /payments route, before any payment work:
 * 1. Failed authentications are limited per client address. A request whose key this process
 *    has not verified recently (missing, unknown, or its first use here) first reads its
 *    address's bucket and is refused with 429 while it is empty, before any lookup; a failed
 *    lookup then spends one token (401). Valid keys never spend: a burst of concurrent first
 *    requests with a new key is not mistaken for guessing.
 * 2. The merchant's tier bucket, shared by every replica through Redis, is spent next; its
 *    RateLimit fields are set on the response, so every answer after this point carries them.
 */
export function paymentsGate(deps: PaymentsGateDeps): RequestHandler {
  const policy = deps.unauthenticatedPolicy;
  /** From an empty bucket, one token is back after this long. */
  const oneTokenSeconds = Math.max(1, Math.ceil(1 / policy.ratePerSecond));
  return async (req: Request, res: Response, next: NextFunction) => {
    const apiKey = BEARER.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const address = req.ip ?? 'unknown';
    if (apiKey === null || !deps.authenticator.isCached(apiKey)) {
      const bucket = await deps.rateLimit('address', address, policy, 0);
      if (bucket.remaining < 1) {
        throw new ApiError('rate_limited', 'Too many failed authentications from this address.', {
          headers: {
            'Retry-After': String(oneTokenSeconds),
            ...rateLimitHeaders(policy, bucket),
          },
        });
      }
    }
    const merchant: Merchant | null = apiKey ? await deps.authenticator.authenticate(apiKey) : null;
    if (!merchant) {
      const spent = await deps.rateLimit('address', address, policy, 1);
      throw new ApiError('unauthorized', 'Send a valid API key as Authorization: Bearer <key>.', {
        headers: rateLimitHeaders(policy, spent),
      });
    }
    const decision = await deps.rateLimit('merchant', merchant.id, merchant.tier);
    res.set(rateLimitHeaders(merchant.tier, decision));
    if (!decision.allowed) {
      throw new ApiError('rate_limited', 'Too many requests for this merchant; slow down.', {
        headers: { 'Retry-After': String(decision.retryAfterSeconds) },
      });
    }
    res.locals.merchant = merchant;
    req.ctx.bind({ merchant_id: merchant.id });
    next();
  };
}
