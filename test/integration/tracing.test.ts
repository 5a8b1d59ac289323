import { randomBytes } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, type TracingHandle } from '../../src/platform/telemetry/start-tracing.js';
import { activeTraceIds, inSpan } from '../../src/platform/telemetry/tracing.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { eventually, readTopic } from '../support/settlement-harness.js';
import { startTestPipeline } from '../support/test-pipeline.js';
import { postRefund } from '../support/refund-client.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

/** One payment's trace across the API, the outbox, Kafka and settlement (real SDK, in memory). */

const exporter = new InMemorySpanExporter();
let tracing: TracingHandle | null;
let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  tracing = startTracing('payments-test', { exporter });
  db = await createTestDatabase();
  api = await startTestPipeline(db);
});
afterAll(async () => {
  await api.close();
  await db.drop();
  await tracing?.shutdown();
});

function traceIdOf(traceparent: string | undefined): string | undefined {
  return traceparent?.split('-')[1];
}

/** Posts a payment with these headers, waits until it is settled; its two Kafka records. */
async function settlePayment(amount: number, headers: Record<string, string>) {
  const { apiKey } = await api.merchant();
  const created = await postPayment(api, {
    apiKey,
    body: { amount, currency: 'EUR' },
    headers,
  });
  expect(created.status).toBe(202);
  const id = created.json.id as string;
  await eventually('settled', async () => {
    const res = await getJson(api, `/payments/${id}`, apiKey);
    return res.json.status === 'settled' ? true : undefined;
  });
  const topic = api.platform.config.KAFKA_TOPIC_PAYMENTS;
  const records = await eventually('both records', async () => {
    const mine = (await readTopic(api.platform.kafka, topic, 2)).filter((r) => r.key === id);
    return mine.length === 2 ? mine : undefined;
  });
  return { id, apiKey, records, topic };
}

describe('tracing', () => {
  it('when a payment is posted with a traceparent, then the API, relay, consumer, worker and acquirer spans are in that one trace and both events carry it', async () => {
    expect(tracing).not.toBeNull();
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const { records: mine, topic } = await settlePayment(4200, {
      traceparent: `00-${traceId}-${callerSpanId}-01`,
      tracestate: 'vendor=abc',
    });

    // Kafka: both records carry the trace, as headers and as envelope attributes.
    expect(mine.map((r) => r.headers.ce_type)).toEqual(['payment.created', 'payment.settled']);
    for (const record of mine) {
      expect(traceIdOf(record.headers.ce_traceparent)).toBe(traceId);
      const envelope = JSON.parse(record.value?.toString() ?? '{}') as { traceparent?: string };
      expect(envelope.traceparent).toBe(record.headers.ce_traceparent);
    }
    expect(mine[0]?.headers.ce_tracestate).toBe('vendor=abc');

    // The spans, all in the caller's trace.
    const spans = await eventually('the whole trace', () => {
      const inTrace = exporter
        .getFinishedSpans()
        .filter((s) => s.spanContext().traceId === traceId);
      const sends = inTrace.filter((s) => s.name === `send ${topic}`);
      const done = sends.length >= 2 && inTrace.some((s) => s.name === 'acquirer charge');
      return Promise.resolve(done ? inTrace : undefined);
    });
    const one = (name: string, kind: SpanKind): ReadableSpan => {
      const found = spans.filter((s) => s.name === name && s.kind === kind);
      expect(found, name).toHaveLength(1);
      return found[0] as ReadableSpan;
    };
    const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
    const server = one('POST /payments', SpanKind.SERVER);
    // One approved charge. A slow machine may time an attempt out and retry it: every attempt
    // is in the trace, and the one that settled is the approved charge's parent.
    const attempts = spans.filter(
      (s) => s.name === 'settle payment' && s.kind === SpanKind.INTERNAL,
    );
    const approved = spans.filter(
      (s) =>
        s.name === 'acquirer charge' &&
        s.kind === SpanKind.CLIENT &&
        s.attributes['acquirer.outcome'] === 'approved',
    );
    expect(approved, 'approved acquirer charges').toHaveLength(1);
    const acquirer = approved[0] as ReadableSpan;
    const settle = attempts.find((s) => s.spanContext().spanId === parentOf(acquirer));
    if (settle === undefined)
      throw new Error('the approved charge has no settle attempt as parent');
    for (const attempt of attempts) expect(parentOf(attempt)).toBe(server.spanContext().spanId);
    const consume = spans.filter((s) => s.name === `process ${topic}`);
    const sends = spans.filter((s) => s.name === `send ${topic}`);

    expect(parentOf(server)).toBe(callerSpanId);
    expect(server.attributes['http.response.status_code']).toBe(202);
    // payment.created: published and consumed as children of the POST's span.
    const createdId = mine[0]?.headers.ce_id;
    const sendCreated = sends.find((s) => s.attributes['messaging.message.id'] === createdId);
    expect(parentOf(sendCreated as ReadableSpan)).toBe(server.spanContext().spanId);
    const intake = consume.find((s) => s.attributes['settlement.outcome'] === 'accepted');
    expect(intake?.kind).toBe(SpanKind.CONSUMER);
    expect(parentOf(intake as ReadableSpan)).toBe(server.spanContext().spanId);
    // The worker's attempt continues the payment.created context; the acquirer call is in it.
    expect(parentOf(settle)).toBe(server.spanContext().spanId);
    expect(parentOf(acquirer)).toBe(settle.spanContext().spanId);
    expect(acquirer.attributes['acquirer.outcome']).toBe('approved');
    // payment.settled carries the attempt's context: its publish is the attempt's child.
    const settledId = mine[1]?.headers.ce_id;
    const sendSettled = sends.find((s) => s.attributes['messaging.message.id'] === settledId);
    expect(parentOf(sendSettled as ReadableSpan)).toBe(settle.spanContext().spanId);
    expect(traceIdOf(mine[1]?.headers.ce_traceparent)).toBe(traceId);
    expect(mine[1]?.headers.ce_traceparent?.split('-')[2]).toBe(settle.spanContext().spanId);
  });

  it('when a refund is posted with a traceparent, then the API, worker and acquirer spans are in that one trace and both refund events carry it', async () => {
    const { id, apiKey, topic } = await settlePayment(5000, {});
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const refund = await postRefund(api, {
      apiKey,
      paymentId: id,
      body: { amount: 1200 },
      headers: { traceparent: `00-${traceId}-${callerSpanId}-01` },
    });
    expect(refund.status).toBe(202);
    const records = await eventually('both refund records', async () => {
      const mine = (await readTopic(api.platform.kafka, topic, 4)).filter(
        (r) => r.key === id && r.headers.ce_type?.startsWith('refund.'),
      );
      return mine.length === 2 ? mine : undefined;
    });
    expect(records.map((r) => r.headers.ce_type)).toEqual(['refund.created', 'refund.succeeded']);
    for (const record of records) expect(traceIdOf(record.headers.ce_traceparent)).toBe(traceId);

    const spans = await eventually('the refund trace', () => {
      const inTrace = exporter
        .getFinishedSpans()
        .filter((s) => s.spanContext().traceId === traceId);
      return Promise.resolve(
        inTrace.some((s) => s.name === 'acquirer refund') ? inTrace : undefined,
      );
    });
    const parentOf = (span: ReadableSpan | undefined) => span?.parentSpanContext?.spanId;
    const server = spans.find((s) => s.kind === SpanKind.SERVER);
    const attempt = spans.find((s) => s.name === 'refund payment');
    const acquirer = spans.find((s) => s.name === 'acquirer refund');
    expect(parentOf(server)).toBe(callerSpanId);
    expect(server?.attributes['http.response.status_code']).toBe(202);
    // The worker's attempt continues the POST's context (stored with the job); the acquirer
    // call is in it, and refund.succeeded carries the attempt's context.
    expect(parentOf(attempt)).toBe(server?.spanContext().spanId);
    expect(attempt?.attributes['refund.outcome']).toBe('succeeded');
    expect(parentOf(acquirer)).toBe(attempt?.spanContext().spanId);
    expect(acquirer?.attributes['acquirer.outcome']).toBe('approved');
    expect(records[0]?.headers.ce_traceparent?.split('-')[2]).toBe(server?.spanContext().spanId);
    expect(records[1]?.headers.ce_traceparent?.split('-')[2]).toBe(attempt?.spanContext().spanId);
  });

  it('when a payment is posted in a sampled-out trace, then no span is recorded and both events carry that trace with the sampled flag off', async () => {
    const traceId = randomBytes(16).toString('hex');
    const { records: mine } = await settlePayment(4300, {
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-00`,
    });
    expect(mine.map((r) => r.headers.ce_type)).toEqual(['payment.created', 'payment.settled']);
    for (const record of mine) {
      const [, recordTraceId, , flags] = record.headers.ce_traceparent?.split('-') ?? [];
      expect(recordTraceId).toBe(traceId);
      expect(flags).toBe('00');
    }
    expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId)).toEqual(
      [],
    );
  });

  it('when TRACE_CALLER_CONTEXT is link, then the caller decides nothing: a new trace, sampled by this service, links to the caller and goes on in the outbox row', async () => {
    const linking = await startTestApi(db, { TRACE_CALLER_CONTEXT: 'link' });
    try {
      const { apiKey } = await linking.merchant();
      const callerTraceId = randomBytes(16).toString('hex');
      const callerSpanId = randomBytes(8).toString('hex');
      // Sampled out by the caller: continued, nothing would be recorded (the test above).
      const created = await postPayment(linking, {
        apiKey,
        body: { amount: 4400, currency: 'EUR' },
        headers: { traceparent: `00-${callerTraceId}-${callerSpanId}-00` },
      });
      expect(created.status).toBe(202);
      const server = await eventually('the server span', () =>
        Promise.resolve(
          exporter
            .getFinishedSpans()
            .find(
              (s) =>
                s.kind === SpanKind.SERVER &&
                s.links.some((link) => link.context.traceId === callerTraceId),
            ),
        ),
      );
      expect(server.spanContext().traceId).not.toBe(callerTraceId);
      expect(server.parentSpanContext).toBeUndefined();
      expect(server.links.map((link) => link.context.spanId)).toEqual([callerSpanId]);
      const { rows } = await db.pool.query<{ traceparent: string }>(
        'SELECT traceparent FROM outbox WHERE aggregate_id = $1',
        [created.json.id],
      );
      expect(rows.map((row) => row.traceparent.split('-')[1])).toEqual([
        server.spanContext().traceId,
      ]);
      expect(rows[0]?.traceparent.endsWith('-01')).toBe(true);
    } finally {
      await linking.close();
    }
  });

  it('when a sampled span is active, then log lines get its trace_id and span_id (the logger mixin), and none outside', async () => {
    const ids = await inSpan('logging', {}, undefined, (span) =>
      Promise.resolve({ ...span.spanContext(), logged: activeTraceIds() }),
    );
    expect(ids.logged).toEqual({ trace_id: ids.traceId, span_id: ids.spanId });
    expect(activeTraceIds()).toEqual({});
  });
});
