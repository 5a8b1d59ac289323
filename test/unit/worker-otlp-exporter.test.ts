import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { logSpanExportOutages } from '../../src/platform/telemetry/tracing.js';
import type { OtlpProtocol } from '../../src/platform/telemetry/tracing-env.js';
import { WorkerOtlpExporter } from '../../src/platform/telemetry/worker-otlp-exporter.js';

interface Received {
  path: string;
  contentType: string;
  body: Buffer;
}

/** A collector on a free port; `answer` decides each response (or never answers). */
async function collector(answer: (res: ServerResponse) => void) {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: Buffer.concat(chunks),
      });
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    received,
    endpoint: `http://127.0.0.1:${String(port)}/v1/traces`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

/** Finished spans, as a BatchSpanProcessor hands them to its exporter. */
function finishedSpans(...names: string[]): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const tracer = provider.getTracer('worker-otlp-exporter.test');
  for (const name of names) tracer.startSpan(name, { attributes: { 'test.name': name } }).end();
  return memory.getFinishedSpans();
}

function exportOnce(exporter: WorkerOtlpExporter, spans: ReadableSpan[]): Promise<ExportResult> {
  return new Promise((resolve) => {
    exporter.export(spans, resolve);
  });
}

const saved = { ...process.env };
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const name of Object.keys(process.env)) {
    if (name.startsWith('OTEL_') && !(name in saved)) Reflect.deleteProperty(process.env, name);
  }
});

/** An exporter pointed at `endpoint` through the standard variables the worker reads. */
function exporterFor(endpoint: string, protocol: OtlpProtocol, timeoutMs?: number) {
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = endpoint;
  if (timeoutMs !== undefined) process.env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT = String(timeoutMs);
  const exporter = new WorkerOtlpExporter(protocol);
  cleanups.push(() => exporter.shutdown());
  return exporter;
}

describe('WorkerOtlpExporter', () => {
  it('when a batch is exported over protobuf, then the collector receives it on /v1/traces and the export succeeds', async () => {
    const sink = await collector((res) => res.writeHead(200).end());
    cleanups.push(sink.close);
    const exporter = exporterFor(sink.endpoint, 'http/protobuf');

    const result = await exportOnce(exporter, finishedSpans('charge-card', 'write-outbox'));

    expect(result.code).toBe(ExportResultCode.SUCCESS);
    expect(sink.received).toHaveLength(1);
    const [request] = sink.received;
    expect(request?.path).toBe('/v1/traces');
    expect(request?.contentType).toBe('application/x-protobuf');
    // Protobuf carries strings as they are: both span names are in the one request.
    expect(request?.body.includes('charge-card')).toBe(true);
    expect(request?.body.includes('write-outbox')).toBe(true);
  });

  it('when the protocol is http/json, then the collector receives the OTLP JSON document with every span', async () => {
    const sink = await collector((res) => res.writeHead(200).end());
    cleanups.push(sink.close);
    const exporter = exporterFor(sink.endpoint, 'http/json');

    const result = await exportOnce(exporter, finishedSpans('a', 'b', 'c'));

    expect(result.code).toBe(ExportResultCode.SUCCESS);
    expect(sink.received[0]?.contentType).toBe('application/json');
    const document = JSON.parse(sink.received[0]?.body.toString() ?? '{}') as {
      resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[];
    };
    const names = document.resourceSpans.flatMap((r) =>
      r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name)),
    );
    expect(names.sort()).toEqual(['a', 'b', 'c']);
  });

  it('when the collector refuses the batch, then the export fails and is reported as an outage, and the next accepted one ends it', async () => {
    let status = 400;
    const sink = await collector((res) => res.writeHead(status).end());
    cleanups.push(sink.close);
    const exporter = exporterFor(sink.endpoint, 'http/protobuf');
    const outcomes: string[] = [];
    logSpanExportOutages({
      failed: (error) => outcomes.push(`failed: ${error instanceof Error ? 'Error' : 'other'}`),
      succeeded: () => outcomes.push('succeeded'),
    });
    cleanups.push(() => {
      logSpanExportOutages({ failed: () => undefined, succeeded: () => undefined });
      return Promise.resolve();
    });

    const refused = await exportOnce(exporter, finishedSpans('refused'));
    status = 200;
    const accepted = await exportOnce(exporter, finishedSpans('accepted'));

    expect(refused.code).toBe(ExportResultCode.FAILED);
    expect(refused.error).toBeInstanceOf(Error);
    expect(accepted.code).toBe(ExportResultCode.SUCCESS);
    expect(sink.received).toHaveLength(2);
    expect(outcomes).toEqual(['failed: Error', 'succeeded']);
  });

  it('when the collector accepts and never answers, then the export fails at the OTLP timeout and shutdown returns', async () => {
    const sink = await collector(() => {
      // Never answers.
    });
    cleanups.push(sink.close);
    const exporter = exporterFor(sink.endpoint, 'http/protobuf', 300);

    const started = Date.now();
    const result = await exportOnce(exporter, finishedSpans('stuck'));
    await exporter.shutdown();

    expect(result.code).toBe(ExportResultCode.FAILED);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('when it is shut down, then a later export fails at once without a thread', async () => {
    const exporter = new WorkerOtlpExporter('http/protobuf');
    await exporter.shutdown();

    const result = await exportOnce(exporter, finishedSpans('late'));

    expect(result.code).toBe(ExportResultCode.FAILED);
  });
});
