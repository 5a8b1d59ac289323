import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Authenticator } from '../merchants/authenticator.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { rateLimitHeaders } from '../rate-limits/rate-limit-headers.js';
import type { RateLimit, RatePolicy } from '../rate-limits/rate-limiter.js';
import { ApiError } from './api-error.js';

export interface PaymentsGateDeps {
  authenticator: Authenticator;
  rateLimit: RateLimit;
  /** The bucket of a client address for lookups of keys this process has not verified. */
  unauthenticatedPolicy: RatePolicy;
}

/** `Bearer <key>`, the scheme case-insensitive (RFC 9110 section 11.1). */
const BEARER = /^bearer ([\x21-\x7e]{1,200})$/i;

/**
 * Authentication and rate limits in front of every /payments route, before any payment work:
 * 1. A request whose key this process has not verified recently (missing, wrong, unknown, or
 *    its first use here) spends a token of its client address's bucket first, so guessing keys
 *    is limited per address and each guess costs at most one indexed lookup.
 * 2. The merchant's tier bucket, shared by every replica through Redis, is spent next; its
 *    RateLimit fields are set on the response, so every answer after this point carries them.
 * Refusals are 401 `unauthorized` and 429 `rate_limited` with Retry-After.
 */
export function paymentsGate(deps: PaymentsGateDeps): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const apiKey = BEARER.exec(req.headers.authorization ?? '')?.[1] ?? null;
    if (apiKey === null || !deps.authenticator.isCached(apiKey)) {
      const policy = deps.unauthenticatedPolicy;
      const gate = await deps.rateLimit('address', req.ip ?? 'unknown', policy);
      if (!gate.allowed) {
        throw new ApiError('rate_limited', 'Too many requests without a valid API key.', {
          headers: {
            'Retry-After': String(gate.retryAfterSeconds),
            ...rateLimitHeaders(policy, gate),
          },
        });
      }
    }
    const merchant: Merchant | null = apiKey ? await deps.authenticator.authenticate(apiKey) : null;
    if (!merchant) {
      throw new ApiError('unauthorized', 'Send a valid API key as Authorization: Bearer <key>.');
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
