import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/http/api-error.js';
import { buildOpenApiDocument } from '../../src/apps/api/openapi.js';
import { SCOPES } from '../../src/merchants/api-key-scopes.js';

interface Doc {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: {
    schemas: Record<
      string,
      {
        properties?: Record<string, Record<string, unknown>>;
        additionalProperties?: unknown;
        required?: string[];
      }
    >;
  };
}

describe('buildOpenApiDocument', () => {
  const doc = buildOpenApiDocument() as unknown as Doc;

  it('when generated, then every operation states its scope: the read scope of its resource for GET, the write scope otherwise, and a 403 insufficient_scope', () => {
    const stated: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      const resource = path.startsWith('/webhook_endpoints')
        ? 'webhooks'
        : path.startsWith('/events')
          ? 'events'
          : path.includes('refunds')
            ? 'refunds'
            : 'payments';
      for (const [method, operation] of Object.entries(operations)) {
        const op = operation as unknown as { security: unknown; 'x-required-scope': string };
        // Events are read only: their one scope is events:read.
        const scope = `${resource}:${method === 'get' || resource === 'events' ? 'read' : 'write'}`;
        expect(op['x-required-scope'], `${method} ${path}`).toBe(scope);
        expect(op.security).toEqual([{ apiKey: [scope] }]);
        expect(documentedCodes(operation.responses)['403']).toEqual(['insufficient_scope']);
        stated.push(scope);
      }
    }
    expect(new Set(stated)).toEqual(new Set(SCOPES));
  });

  it('when generated, then it is OpenAPI 3.1 with the payments operations', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual([
      '/payments',
      '/payments/{id}',
      '/payments/{id}/capture',
      '/payments/{id}/cancel',
      '/payments/{id}/refunds',
      '/refunds/{id}',
      '/webhook_endpoints',
      '/webhook_endpoints/{id}',
      '/webhook_endpoints/{id}/rotate_secret',
      '/webhook_endpoints/{id}/deliveries',
      '/webhook_endpoints/{id}/deliveries/{delivery_id}',
      '/webhook_endpoints/{id}/deliveries/{delivery_id}/retry',
      '/webhook_endpoints/{id}/replay',
      '/events',
      '/events/{id}',
    ]);
    expect(Object.keys(doc.paths['/payments/{id}/refunds'] ?? {})).toEqual(['post', 'get']);
    expect(Object.keys(doc.paths['/payments'] ?? {})).toEqual(['post', 'get']);
  });

  it('when generated, then the request schema carries the zod limits (no hand-written copy)', () => {
    const request = doc.components.schemas.CreatePaymentRequest;
    expect(request?.additionalProperties).toBe(false);
    expect(request?.required).toEqual(['amount', 'currency']);
    expect(request?.properties?.amount).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 99999999,
    });
    expect(request?.properties?.description).toMatchObject({ maxLength: 500 });
    expect(request?.properties?.source).toMatchObject({ default: 'tok_visa' });
  });

  it('when generated, then every error status of POST /payments is documented as problem+json', () => {
    const responses = doc.paths['/payments']?.post?.responses ?? {};
    const statuses = new Set(
      Object.values(ERRORS)
        .map((e) => String(e.status))
        .filter((s) => !['404', '405', '500'].includes(s)),
    );
    for (const status of statuses) expect(Object.keys(responses)).toContain(status);
    expect(JSON.stringify(doc)).not.toContain('#/$defs/');
  });

  it('when generated, then it states the limits the server enforces', () => {
    const post = doc.paths['/payments']?.post as unknown as {
      parameters: { name: string; schema: Record<string, unknown> }[];
    };
    const key = post.parameters.find((p) => p.name === 'Idempotency-Key')?.schema;
    expect(key).toMatchObject({ minLength: 1, maxLength: 512 });
    expect(typeof key?.pattern).toBe('string');
    const list = doc.paths['/payments']?.get as unknown as {
      parameters: { name: string; schema: Record<string, unknown> }[];
    };
    expect(list.parameters.find((p) => p.name === 'limit')?.schema).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 100,
    });
    const metadata = doc.components.schemas.CreatePaymentRequest?.properties?.metadata;
    expect(metadata).toMatchObject({ maxProperties: 20, default: {} });
    expect(JSON.stringify(metadata)).toContain('__proto__');
    expect(Object.keys(doc.paths['/payments']?.get?.responses ?? {})).toContain('400');
  });

  it('when generated, then the 202 links to the payment, the page after it and its refunds; the refund 202 links to the refund', () => {
    const created = doc.paths['/payments']?.post?.responses['202'] as { links: object };
    expect(created.links).toMatchObject({
      GetPayment: { operationId: 'getPayment', parameters: { id: '$response.body#/id' } },
      CreateRefund: { operationId: 'createRefund', parameters: { id: '$response.body#/id' } },
      ListRefunds: { operationId: 'listRefunds', parameters: { id: '$response.body#/id' } },
    });
    const refund = doc.paths['/payments/{id}/refunds']?.post?.responses['202'] as { links: object };
    expect(refund.links).toMatchObject({
      GetRefund: { operationId: 'getRefund', parameters: { id: '$response.body#/id' } },
    });
  });

  it('when generated, then each error response of POST /payments names the codes of the brief table', () => {
    const { 404: _notFound, ...brief } = BRIEF_ERROR_TABLE;
    const expected = {
      ...brief,
      ...SCOPE_403,
      400: [...(brief[400] ?? []), ...INPUT_HARDENING_400].sort(),
    };
    expect(documentedCodes(doc.paths['/payments']?.post?.responses ?? {})).toEqual(expected);
  });

  it('when generated, then POST /payments/{id}/refunds documents the refund refusals under 422', () => {
    const documented = documentedCodes(doc.paths['/payments/{id}/refunds']?.post?.responses ?? {});
    expect(documented['422']).toEqual([
      'idempotency_key_reused',
      'payment_not_refundable',
      'refund_exceeds_payment',
    ]);
    expect(documented['404']).toEqual(['not_found']);
    // The same body parser as POST /payments: the same 400s.
    expect(documented['400']).toEqual(
      [...(BRIEF_ERROR_TABLE[400] ?? []), ...INPUT_HARDENING_400].sort(),
    );
  });

  it.each([
    ['/payments', 'get'],
    ['/payments/{id}', 'get'],
  ])(
    'when generated, then every error code of %s %s sits under its status from the brief',
    (path, method) => {
      const documented = documentedCodes(doc.paths[path]?.[method]?.responses ?? {});
      expect(Object.keys(documented).length).toBeGreaterThan(0);
      for (const [status, codes] of Object.entries(documented)) {
        expect({ ...BRIEF_ERROR_TABLE, ...SCOPE_403 }[status], `status ${status}`).toEqual(
          expect.arrayContaining(codes),
        );
      }
      if (path === '/payments/{id}') expect(documented['404']).toEqual(['not_found']);
    },
  );

  it('when generated, then the webhook operations name existing schemas, show the secret only on create and rotate, and require a key for replay', () => {
    const text = JSON.stringify(doc);
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)) {
      expect(doc.components.schemas, name).toHaveProperty(name ?? '');
    }
    const schemas = doc.components.schemas;
    expect(Object.keys(schemas.CreatedWebhookEndpoint?.properties ?? {})).toContain('secret');
    expect(Object.keys(schemas.RotatedWebhookSecret?.properties ?? {})).toContain('secret');
    expect(Object.keys(schemas.WebhookEndpoint?.properties ?? {})).not.toContain('secret');
    expect(Object.keys(schemas.WebhookDeliveryDetail?.properties ?? {})).toContain(
      'attempt_history',
    );
    expect(schemas.CreateWebhookEndpointRequest?.required).toEqual(['url', 'enabled_events']);
    type Op = {
      parameters: { name: string; required: boolean }[];
      responses: Record<string, unknown>;
    };
    const paths = doc.paths as unknown as Record<string, Record<string, Op>>;
    const replay = paths['/webhook_endpoints/{id}/replay']?.post;
    expect(replay?.parameters.find((p) => p.name === 'Idempotency-Key')?.required).toBe(true);
    const create = paths['/webhook_endpoints']?.post;
    expect(create?.parameters.find((p) => p.name === 'Idempotency-Key')?.required).toBe(false);
    expect(Object.keys(create?.responses ?? {})).toEqual(
      expect.arrayContaining(['201', '400', '409', '422']),
    );
  });
});

/** The error table of the product brief (section 4), written out by hand on purpose. */
const BRIEF_ERROR_TABLE: Record<string, string[]> = {
  400: [
    'idempotency_key_invalid',
    'idempotency_key_missing',
    'malformed_json',
    'validation_failed',
  ],
  401: ['unauthorized'],
  404: ['not_found'],
  409: ['idempotency_key_in_use'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
  422: ['idempotency_key_reused'],
  429: ['rate_limited'],
  503: ['service_unavailable'],
};

/** Beyond the brief's table: a restricted key without the operation's scope (DESIGN 115). */
const SCOPE_403: Record<string, string[]> = { 403: ['insufficient_scope'] };

/** 400 codes beyond the brief's table: bodies that cannot be read or are not UTF-8 (DESIGN 26). */
const INPUT_HARDENING_400 = ['invalid_encoding', 'malformed_body'];

/** Status -> sorted `code` enum of each 4xx/5xx response's problem+json schema. */
function documentedCodes(responses: Record<string, unknown>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [status, response] of Object.entries(responses)) {
    if (Number(status) < 400) continue;
    const schema = (response as ProblemResponse).content?.['application/problem+json']?.schema;
    const codes = schema?.allOf?.flatMap((part) => part.properties?.code?.enum ?? []) ?? [];
    out[status] = [...codes].sort();
  }
  return out;
}

interface ProblemResponse {
  content?: Record<
    string,
    { schema?: { allOf?: { properties?: { code?: { enum?: string[] } } }[] } }
  >;
}
