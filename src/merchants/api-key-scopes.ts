/**
 * What an API key may do: a read and a write scope per resource family of the API (events, which
 * only the service writes, have a read scope alone). A secret key
 * (`sk_`, scopes NULL in api_keys) holds every scope; a restricted key (`rk_`) only those listed.
 * `<resource>:write` includes `<resource>:read` (as the levels of Stripe's restricted keys):
 * a key that may create payments may read them back.
 */
export const SCOPES = [
  'payments:read',
  'payments:write',
  'refunds:read',
  'refunds:write',
  'webhooks:read',
  'webhooks:write',
  // Read only: events are written by the service, never by a key (GET /events, DESIGN 129).
  'events:read',
] as const;

export type Scope = (typeof SCOPES)[number];

/** The resource families: payments, refunds (of payments), webhook endpoints and deliveries. */
export type ScopeResource = 'payments' | 'refunds' | 'webhooks';

/** `merchant:key create --read-only`: every read, no write (a reporting job, a support view). */
export const READ_ONLY_SCOPES: readonly Scope[] = [
  'payments:read',
  'refunds:read',
  'webhooks:read',
  'events:read',
];

/**
 * The scopes a key holds as bits (one per scope, a write scope's read bit set with it), so the
 * check on every request is one AND on a number cached with the merchant: no allocation, no
 * lookup beyond authentication.
 */
export type ScopeMask = number;

const BIT: Readonly<Record<Scope, number>> = Object.fromEntries(
  SCOPES.map((scope, i) => [scope, 1 << i]),
) as Record<Scope, number>;

/** What holding each scope grants: its own bit, and for a write scope its read scope's too. */
const GRANTS: Readonly<Record<Scope, number>> = Object.fromEntries(
  SCOPES.map((scope) => {
    const [resource, level] = scope.split(':');
    const read = level === 'write' ? BIT[`${resource}:read` as Scope] : 0;
    return [scope, BIT[scope] | read];
  }),
) as Record<Scope, number>;

/** Every scope: what a secret key, and every key made before scopes, holds. */
export const ALL_SCOPES: ScopeMask = SCOPES.reduce((mask, scope) => mask | BIT[scope], 0);

function isScope(name: string): name is Scope {
  return (SCOPES as readonly string[]).includes(name);
}

/**
 * The mask of a key's stored scopes: null (a secret key) is every scope. A name this version
 * does not know (written by a newer one) grants nothing: unknown is refused, never allowed.
 */
export function scopeMask(scopes: readonly string[] | null): ScopeMask {
  if (scopes === null) return ALL_SCOPES;
  let mask = 0;
  for (const name of scopes) {
    if (isScope(name)) mask |= GRANTS[name];
  }
  return mask;
}

/** True when a key of `mask` may do what `scope` guards. */
export function holdsScope(mask: ScopeMask, scope: Scope): boolean {
  return (mask & BIT[scope]) !== 0;
}

/** The scope of each kind of request to one resource family: GET and HEAD read, the rest write. */
export interface ResourceScopes {
  read: Scope;
  write: Scope;
}

export function resourceScopes(resource: ScopeResource): ResourceScopes {
  return { read: `${resource}:read`, write: `${resource}:write` };
}

/**
 * The scopes of the events family (GET /events, /events/{id}): read only. Its routes allow only
 * GET and HEAD before the gate, so `write` is never asked; it names the read scope so that a
 * method slipping through would still need one.
 */
export const EVENT_SCOPES: ResourceScopes = { read: 'events:read', write: 'events:read' };

/** The scope a request with `method` needs on a resource family of `scopes`. */
export function scopeForMethod(scopes: ResourceScopes, method: string): Scope {
  return method === 'GET' || method === 'HEAD' ? scopes.read : scopes.write;
}

export type ParsedScopes = { ok: true; scopes: Scope[] } | { ok: false; message: string };

/**
 * A comma-separated list of scope names, as `merchant:key create --scopes` takes it: spaces
 * around names are ignored, duplicates collapse; the result is in SCOPES order. Empty, or any
 * name that is not a scope, is refused with a message naming it.
 */
export function parseScopes(text: string): ParsedScopes {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) {
    return { ok: false, message: `no scope given; scopes are ${SCOPES.join(', ')}` };
  }
  const unknown = names.filter((name) => !isScope(name));
  if (unknown.length > 0) {
    return {
      ok: false,
      message: `unknown scope ${unknown.map((n) => JSON.stringify(n)).join(', ')}; scopes are ${SCOPES.join(', ')}`,
    };
  }
  return { ok: true, scopes: SCOPES.filter((scope) => names.includes(scope)) };
}
