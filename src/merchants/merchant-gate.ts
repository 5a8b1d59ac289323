import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rateLimitHeaders } from '../rate-limits/rate-limit-headers.js';
import type {
  RateDecision,
  RateLimit,
  RateLimitAndPeek,
  RatePolicy,
} from '../rate-limits/rate-limiter.js';
import { apiKeyPrefix } from './api-key.js';
import { holdsScope, scopeForMethod, type ResourceScopes } from './api-key-scopes.js';
import type { Authenticator } from './authenticator.js';
import { InsufficientScope, RateLimited, Unauthenticated } from './gate-errors.js';
import type { KeyHolder, Merchant } from './merchant-repository.js';

export interface MerchantGateDeps {
  authenticator: Authenticator;
  rateLimit: RateLimit;
  /**
   * Failed authentications allowed per client address, and (as a bucket of its own, the same
   * numbers) per presented key prefix. Only failures spend from them.
   */
  unauthenticatedPolicy: RatePolicy;
  /**
   * With both: a POST for which `peekKeyOf` names a Redis key (the composition root names the
   * cached response of its Idempotency-Key) spends the merchant's bucket and reads that key in
   * the same Redis command (`rateLimitAndPeek`), leaving the raw entry (or null) in
   * `res.locals.peekedResponse` for the create to replay without another round trip. Without
   * them, or when it names none, only the bucket is spent. The gate knows no key or cache.
   */
  rateLimitAndPeek?: RateLimitAndPeek;
  peekKeyOf?: (req: Request, merchantId: string) => string | null;
}

/** What the gate leaves in `res.locals` for a POST it peeked for (see MerchantGateDeps). */
export interface PeekedLocals {
  /** The cached response's raw entry; null: none (or not read); absent: not peeked. */
  peekedResponse?: string | null;
}

/** `Bearer <key>`: the scheme case-insensitive, one or more spaces before the key (RFC 9110 section 11.1, `1*SP`). */
const BEARER = /^bearer +([\x21-\x7e]{1,200})$/i;

/**
 * Authentication, scopes and rate limits in front of every merchant route (/payments, its
 * refunds, /refunds, /webhook_endpoints), before any payment or refund work (DESIGN 35). Each
 * router names the `scopes` of its resource family where it mounts the gate: a GET or HEAD needs
 * the read scope, any other method the write scope (DESIGN 115). Sets `res.locals.merchant`:
 * 1. The key is checked first: from this process's cache, else one indexed lookup (a string not
 *    shaped like a key, or one looked up in vain within the negative TTL, costs none). A valid
 *    key is never refused for failures, its own or anyone's: not behind a load balancer whose
 *    one address a guesser shares, not for a prefix someone is guessing at.
 * 2. Only a failed authentication is counted, against its client address, then (while the
 *    address is under its limit) against the presented key prefix. It is 401, or 429 with
 *    Retry-After when the address or the prefix had already used up its failures.
 * 2b. A valid key without the request's scope is 403 `insufficient_scope`, checked against the
 *    scopes cached with the merchant (one AND): before the bucket, so a refusal costs no Redis
 *    command, reads no cached response and writes nothing.
 * 3. The merchant's tier bucket, shared by every replica through Redis, is spent next; its
 *    RateLimit fields are set on the response, so every answer after this point carries them.
 */
export function merchantGate(deps: MerchantGateDeps, scopes: ResourceScopes): RequestHandler {
  const byAddress = deps.unauthenticatedPolicy;
  const byPrefix: RatePolicy = { ...byAddress, name: `${byAddress.name}-key-prefix` };

  const tooMany = (message: string, policy: RatePolicy, decision: RateDecision) =>
    new RateLimited(message, {
      retryAfterSeconds: decision.retryAfterSeconds,
      fields: rateLimitHeaders(policy, decision),
    });

  /** Counts one failed authentication and answers it: 401, or 429 over a failure limit. */
  const failed = async (
    address: string,
    apiKey: string | null,
  ): Promise<RateLimited | Unauthenticated> => {
    const addressDecision = await deps.rateLimit('address', address, byAddress);
    if (!addressDecision.allowed) {
      return tooMany(
        'Too many failed authentications from this address.',
        byAddress,
        addressDecision,
      );
    }
    let shown: [RatePolicy, RateDecision] = [byAddress, addressDecision];
    if (apiKey !== null) {
      const prefixDecision = await deps.rateLimit('key-prefix', apiKeyPrefix(apiKey), byPrefix);
      if (!prefixDecision.allowed) {
        return tooMany(
          'Too many failed authentications with this key prefix.',
          byPrefix,
          prefixDecision,
        );
      }
      if (prefixDecision.remaining < addressDecision.remaining) shown = [byPrefix, prefixDecision];
    }
    return new Unauthenticated('Send a valid API key as Authorization: Bearer <key>.', {
      fields: rateLimitHeaders(...shown),
    });
  };

  /** The merchant's tier bucket; for a keyed POST, the key's cached response read with it. */
  const spendMerchantBucket = async (
    req: Request,
    res: Response,
    merchant: Merchant,
  ): Promise<RateDecision> => {
    const { rateLimitAndPeek, peekKeyOf } = deps;
    const peekKey =
      req.method === 'POST' && rateLimitAndPeek && peekKeyOf ? peekKeyOf(req, merchant.id) : null;
    if (!rateLimitAndPeek || peekKey === null) {
      return deps.rateLimit('merchant', merchant.id, merchant.tier);
    }
    const { peeked, ...decision } = await rateLimitAndPeek(
      'merchant',
      merchant.id,
      merchant.tier,
      peekKey,
    );
    (res.locals as PeekedLocals).peekedResponse = peeked;
    return decision;
  };

  return async (req: Request, res: Response, next: NextFunction) => {
    const apiKey = BEARER.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const merchant: KeyHolder | null = apiKey
      ? await deps.authenticator.authenticate(apiKey)
      : null;
    if (!merchant) throw await failed(req.ip ?? 'unknown', apiKey);
    const needed = scopeForMethod(scopes, req.method);
    if (!holdsScope(merchant.scopes, needed)) {
      req.ctx.bind({ merchant_id: merchant.id });
      throw new InsufficientScope(needed);
    }
    const decision = await spendMerchantBucket(req, res, merchant);
    res.set(rateLimitHeaders(merchant.tier, decision));
    if (!decision.allowed) {
      throw new RateLimited('Too many requests for this merchant; slow down.', {
        retryAfterSeconds: decision.retryAfterSeconds,
      });
    }
    res.locals.merchant = merchant;
    req.ctx.bind({ merchant_id: merchant.id });
    next();
  };
}
