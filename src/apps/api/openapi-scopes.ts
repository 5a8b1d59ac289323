import {
  EVENT_SCOPES,
  READ_ONLY_SCOPES,
  resourceScopes,
  SCOPES,
  scopeForMethod,
  type ScopeResource,
} from '../../merchants/api-key-scopes.js';
import { problems, type JsonObject } from './openapi-parts.js';

// Each operation's scope in the OpenAPI document (DESIGN 115): the routers name their resource
// family where they mount the merchant gate; this table names it for the document, and the
// integration test api-key-scopes.test.ts walks every operation to prove the two agree.

/** The resource family of every path of the document; a path missing here fails the build. */
const RESOURCE_OF_PATH: Readonly<Record<string, ScopeResource | 'events'>> = {
  '/payments': 'payments',
  '/payments/{id}': 'payments',
  '/payments/{id}/refunds': 'refunds',
  '/refunds/{id}': 'refunds',
  '/webhook_endpoints': 'webhooks',
  '/webhook_endpoints/{id}': 'webhooks',
  '/webhook_endpoints/{id}/rotate_secret': 'webhooks',
  '/webhook_endpoints/{id}/deliveries': 'webhooks',
  '/webhook_endpoints/{id}/deliveries/{delivery_id}': 'webhooks',
  '/webhook_endpoints/{id}/deliveries/{delivery_id}/retry': 'webhooks',
  '/webhook_endpoints/{id}/replay': 'webhooks',
  '/events': 'events',
  '/events/{id}': 'events',
  '/payments/{id}/capture': 'payments',
  '/payments/{id}/cancel': 'payments',
};

/**
 * `paths` with each operation's scope stated twice: as the role of its security requirement
 * (OpenAPI 3.1 allows role names for an http scheme) and as `x-required-scope`, with the 403
 * `insufficient_scope` among its responses.
 */
export function withScopes(paths: JsonObject): JsonObject {
  return Object.fromEntries(
    Object.entries(paths).map(([path, operations]) => {
      const resource = RESOURCE_OF_PATH[path];
      if (!resource) throw new Error(`openapi-scopes.ts names no scope for ${path}`);
      const scopes = resource === 'events' ? EVENT_SCOPES : resourceScopes(resource);
      return [
        path,
        Object.fromEntries(
          Object.entries(operations as Record<string, JsonObject>).map(([method, operation]) => {
            const scope = scopeForMethod(scopes, method.toUpperCase());
            const responses = operation.responses as JsonObject;
            return [
              method,
              {
                ...operation,
                security: [{ apiKey: [scope] }],
                'x-required-scope': scope,
                responses: { ...responses, ...problems('insufficient_scope') },
              },
            ];
          }),
        ),
      ];
    }),
  );
}

/** The security scheme, with the scopes a key may hold. */
export const apiKeyScheme: JsonObject = {
  type: 'http',
  scheme: 'bearer',
  description:
    'An API key: a secret key (sk_) may do everything; a restricted key (rk_) only its scopes, ' +
    `among ${SCOPES.join(', ')} (a write scope includes its read scope; read-only keys hold ` +
    `${READ_ONLY_SCOPES.join(', ')}). GET and HEAD need the read scope of their resource, other ` +
    'methods its write scope; each operation names its own as `x-required-scope`. Without it: ' +
    '403 `insufficient_scope`, before anything is written, with WWW-Authenticate naming the scope.',
};
