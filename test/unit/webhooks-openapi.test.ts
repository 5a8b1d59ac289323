import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/apps/api/openapi.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/webhook-fanout.js';
import { validate } from '../../src/http/validate.js';
import { createWebhookEndpointBodySchema } from '../../src/webhooks/webhook-endpoint-schemas.js';

// The webhook operations' part of the document states the rules the server applies, so the
// contract fuzzer's schema-valid requests are accepted (DESIGN 64).

type Json = Record<string, unknown>;
interface Doc {
  paths: Record<string, Record<string, { responses: Record<string, Json>; description?: string }>>;
  components: { schemas: Record<string, { properties: Record<string, Json> }> };
}

const doc = buildOpenApiDocument() as unknown as Doc;
const request = doc.components.schemas.CreateWebhookEndpointRequest?.properties ?? {};

describe('the webhook operations of the OpenAPI document', () => {
  it('when enabled_events is stated, then it is ["*"] alone or distinct known types, as the server validates', () => {
    for (const name of ['CreateWebhookEndpointRequest', 'UpdateWebhookEndpointRequest']) {
      expect(doc.components.schemas[name]?.properties.enabled_events).toMatchObject({
        type: 'array',
        minItems: 1,
        uniqueItems: true,
        anyOf: [
          { items: { const: '*' }, maxItems: 1 },
          { items: { enum: [...WEBHOOK_EVENT_TYPES] }, maxItems: WEBHOOK_EVENT_TYPES.length },
        ],
      });
    }
    // Merchants subscribe to every result of the events contract, the manual-capture ones too.
    expect(WEBHOOK_EVENT_TYPES).toEqual([
      'payment.authorized',
      'payment.settled',
      'payment.failed',
      'payment.canceled',
      'refund.succeeded',
      'refund.failed',
    ]);
    const body = (events: unknown) => ({ url: 'https://example.com/', enabled_events: events });
    const manual = ['payment.authorized', 'payment.canceled'];
    for (const events of [['*'], ['payment.settled'], manual, [...WEBHOOK_EVENT_TYPES]]) {
      expect(validate(createWebhookEndpointBodySchema, body(events)).enabled_events).toEqual(
        events,
      );
    }
    for (const events of [
      ['*', '*'],
      ['*', 'payment.failed'],
      ['refund.failed', 'refund.failed'],
    ]) {
      expect(() => validate(createWebhookEndpointBodySchema, body(events))).toThrow(
        /validation_failed/,
      );
    }
  });

  it('when url and description are stated, then with the pattern and the lengths the server counts', () => {
    const url = request.url as { pattern: string; maxLength: number };
    expect(url).toMatchObject({ type: 'string', maxLength: 2048, format: 'uri' });
    const pattern = new RegExp(url.pattern, 'u');
    for (const ok of ['https://example.com/hooks?a=1', 'HTTP://h/é', 'http://[::1]:8080/']) {
      expect(pattern.test(ok), ok).toBe(true);
    }
    for (const bad of ['ftp://x/', 'http://a b/', 'http://a/\u0000', ' http://a/', 'http:x']) {
      expect(pattern.test(bad), bad).toBe(false);
    }
    expect(request.description).toMatchObject({ type: 'string', maxLength: 500 });
    // 500 emoji are 500 characters (code points), as maxLength and Postgres count them.
    const emoji = { url: 'https://e.com/', enabled_events: ['*'], description: '😀'.repeat(500) };
    expect(validate(createWebhookEndpointBodySchema, emoji).description).toHaveLength(1000);
  });

  it('when the operations answer, then 422 webhook_url_not_allowed is documented on create and patch, every error as problem+json', () => {
    const create = doc.paths['/webhook_endpoints']?.post;
    const patch = doc.paths['/webhook_endpoints/{id}']?.patch;
    for (const op of [create, patch]) {
      expect(JSON.stringify(op?.responses['422'])).toContain('webhook_url_not_allowed');
    }
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (!path.startsWith('/webhook_endpoints')) continue;
      for (const [method, op] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const content = response.content as Json;
          expect(Object.keys(content), `${method} ${path} ${status}`).toEqual([
            'application/problem+json',
          ]);
          expect(JSON.stringify(content)).toContain('#/components/schemas/Problem');
        }
      }
    }
  });

  it('when an endpoint is created, then its 201 links to every operation on it', () => {
    const created = doc.paths['/webhook_endpoints']?.post?.responses['201'] as { links: Json };
    const targets = Object.values(created.links).map((link) => (link as Json).operationId);
    expect(targets.sort()).toEqual(
      [
        'deleteWebhookEndpoint',
        'getWebhookEndpoint',
        'listWebhookDeliveries',
        'listWebhookEndpoints',
        'replayWebhookEvents',
        'rotateWebhookSecret',
        'updateWebhookEndpoint',
      ].sort(),
    );
  });
});
