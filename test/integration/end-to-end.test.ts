import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { eventually, readTopic } from '../support/settlement-harness.js';
import { getJson, postPayment, type TestApi } from '../support/test-api.js';
import { startTestPipeline } from '../support/test-pipeline.js';

/**
 * The whole product: API -> outbox -> relay -> Kafka -> settlement -> outbox -> relay, each role
 * with its own clients and database login, as deployed.
 */

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestPipeline(db);
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

describe('end to end', () => {
  it('when a payment is posted, then GET shows it settled and payment.settled follows payment.created on the topic', async () => {
    const { apiKey } = await api.merchant();
    const created = await postPayment(api, { apiKey, body: { amount: 2500, currency: 'USD' } });
    expect(created.status).toBe(202);
    const id = created.json.id as string;

    const final = await eventually('GET shows settled', async () => {
      const res = await getJson(api, `/payments/${id}`, apiKey);
      return res.json.status === 'settled' ? res.json : undefined;
    });
    expect(final).toMatchObject({ id, amount: 2500, currency: 'USD', status: 'settled' });

    const records = await readTopic(
      api.platform.kafka,
      api.platform.config.KAFKA_TOPIC_PAYMENTS,
      2,
    );
    const mine = records.filter((r) => r.key === id);
    expect(mine.map((r) => r.headers.ce_type)).toEqual(['payment.created', 'payment.settled']);
    expect(mine.map((r) => r.headers.ce_id)).toEqual([
      paymentEventId(id, 'payment.created'),
      paymentEventId(id, 'payment.settled'),
    ]);
    const settledEvent = JSON.parse(mine[1]?.value?.toString() ?? '{}') as {
      data: { status: string };
    };
    expect(settledEvent.data.status).toBe('settled');
  });

  it('when a payment is declined, then GET shows failed with card_declined and payment.failed is published', async () => {
    const { apiKey } = await api.merchant('Declines');
    const created = await postPayment(api, {
      apiKey,
      body: { amount: 100, currency: 'EUR', source: 'tok_decline' },
    });
    const id = created.json.id as string;
    const final = await eventually('GET shows failed', async () => {
      const res = await getJson(api, `/payments/${id}`, apiKey);
      return res.json.status === 'failed' ? res.json : undefined;
    });
    expect(final.failure_code).toBe('card_declined');
    const records = await readTopic(
      api.platform.kafka,
      api.platform.config.KAFKA_TOPIC_PAYMENTS,
      4,
    );
    expect(records.filter((r) => r.key === id).map((r) => r.headers.ce_type)).toEqual([
      'payment.created',
      'payment.failed',
    ]);
  });
});
