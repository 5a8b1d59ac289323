import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/http/api-error.js';
import { buildOpenApiDocument } from '../../src/http/openapi.js';

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

  it('when generated, then it is OpenAPI 3.1 with the payments operations', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(['/payments', '/payments/{id}']);
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

  it('when generated, then the 202 links to the payment and to the page after it', () => {
    const created = doc.paths['/payments']?.post?.responses['202'] as { links: object };
    expect(created.links).toMatchObject({
      GetPayment: { operationId: 'getPayment', parameters: { id: '$response.body#/id' } },
    });
  });
});
