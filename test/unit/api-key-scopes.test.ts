import { describe, expect, it } from 'vitest';
import {
  ALL_SCOPES,
  holdsScope,
  parseScopes,
  READ_ONLY_SCOPES,
  resourceScopes,
  SCOPES,
  scopeForMethod,
  scopeMask,
} from '../../src/merchants/api-key-scopes.js';
import { generateApiKey, isWellFormedApiKey } from '../../src/merchants/api-key.js';
import { toApiError } from '../../src/http/error-handler.js';
import { InsufficientScope } from '../../src/merchants/gate-errors.js';

describe('parseScopes', () => {
  it('when given a comma-separated list with spaces and a duplicate, then the distinct scopes in catalogue order', () => {
    expect(parseScopes(' refunds:write,payments:read , payments:read')).toEqual({
      ok: true,
      scopes: ['payments:read', 'refunds:write'],
    });
    expect(parseScopes(SCOPES.join(','))).toEqual({ ok: true, scopes: [...SCOPES] });
  });

  it.each([
    ['', 'no scope given'],
    [' , ,', 'no scope given'],
    ['payments:read,payments:admin', 'unknown scope "payments:admin"'],
    ['Payments:Read', 'unknown scope "Payments:Read"'],
    ['payments', 'unknown scope "payments"'],
    ['webhooks:manage,refunds', 'unknown scope "webhooks:manage", "refunds"'],
  ])('when given %j, then it is refused naming the problem and the known scopes', (text, why) => {
    const parsed = parseScopes(text);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.message).toContain(why);
    expect(parsed.message).toContain(SCOPES.join(', '));
  });
});

describe('scopeMask and holdsScope', () => {
  it('when the stored scopes are null (a secret key, or a key made before scopes), then every scope is held', () => {
    expect(scopeMask(null)).toBe(ALL_SCOPES);
    for (const scope of SCOPES) expect(holdsScope(scopeMask(null), scope)).toBe(true);
  });

  it('when a key is read-only, then it holds every read scope and no write scope', () => {
    const mask = scopeMask(READ_ONLY_SCOPES);
    for (const scope of SCOPES) expect(holdsScope(mask, scope)).toBe(scope.endsWith(':read'));
  });

  it('when a key holds a write scope, then it also holds that resource read scope and nothing else', () => {
    const mask = scopeMask(['payments:write']);
    expect(SCOPES.filter((scope) => holdsScope(mask, scope))).toEqual([
      'payments:read',
      'payments:write',
    ]);
  });

  it('when a stored scope is unknown to this version, then it grants nothing', () => {
    expect(scopeMask(['payments:admin'])).toBe(0);
    expect(scopeMask(['payments:admin', 'refunds:read'])).toBe(scopeMask(['refunds:read']));
    expect(scopeMask([])).toBe(0);
  });
});

describe('the scope of a request', () => {
  it('when the method is GET or HEAD, then the read scope of the resource; any other method, the write scope', () => {
    const webhooks = resourceScopes('webhooks');
    expect(scopeForMethod(webhooks, 'GET')).toBe('webhooks:read');
    expect(scopeForMethod(webhooks, 'HEAD')).toBe('webhooks:read');
    for (const method of ['POST', 'PATCH', 'DELETE', 'PUT']) {
      expect(scopeForMethod(webhooks, method)).toBe('webhooks:write');
    }
  });

  it('when refused, then 403 insufficient_scope naming the scope in the detail and in WWW-Authenticate', () => {
    const mapped = toApiError(new InsufficientScope('refunds:write'), 1);
    expect(mapped.toProblem()).toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect(mapped.detail).toContain('refunds:write');
    expect(mapped.options.headers).toEqual({
      'WWW-Authenticate': 'Bearer error="insufficient_scope", scope="refunds:write"',
    });
  });
});

describe('restricted key strings', () => {
  it('when generated, then a secret key starts sk_, a restricted one rk_, and both are well formed', () => {
    const secret = generateApiKey();
    const restricted = generateApiKey('restricted');
    expect(secret).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(restricted).toMatch(/^rk_[A-Za-z0-9_-]{43}$/);
    expect(isWellFormedApiKey(secret) && isWellFormedApiKey(restricted)).toBe(true);
    expect(isWellFormedApiKey(`pk_${restricted.slice(3)}`)).toBe(false);
  });
});
