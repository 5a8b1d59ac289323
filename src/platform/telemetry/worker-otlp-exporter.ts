import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { OtlpProtocol } from './tracing-env.js';
import { reportSpanExport } from './tracing.js';

const require = createRequire(import.meta.url);

/**
 * The export thread: the standard OTLP/HTTP transport of `@opentelemetry/otlp-exporter-base`
 * (endpoint, headers, timeout, compression and retries from the same OTEL_EXPORTER_OTLP_*
 * variables as the stock exporter), fed request bodies already serialized by the main thread.
 * Plain JavaScript run with `eval`, so it needs no file of its own in dist or under the test
 * runner; the packages come by absolute path (workerData), resolved where the service runs.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createOtlpHttpExportDelegate, convertLegacyHttpOptions } = require(workerData.exporterBase);
const { JsonTraceSerializer, ProtobufTraceSerializer } = require(workerData.transformer);
const json = workerData.protocol === 'http/json';
const serializer = json ? JsonTraceSerializer : ProtobufTraceSerializer;
const delegate = createOtlpHttpExportDelegate(
  convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', {
    'Content-Type': json ? 'application/json' : 'application/x-protobuf',
  }),
  { serializeRequest: (body) => body, deserializeResponse: (data) => serializer.deserializeResponse(data) },
  'otlp_http_span_exporter',
  { name: 'span', countItems: () => 0 },
  undefined,
);
parentPort.on('message', (message) => {
  if (message.type === 'export') {
    delegate.export(message.body, (result) => {
      const error = result.error === undefined ? undefined : String(result.error.message ?? result.error);
      parentPort.postMessage({ type: 'exported', id: message.id, code: result.code, error });
    });
  } else if (message.type === 'shutdown') {
    delegate.shutdown().finally(() => parentPort.postMessage({ type: 'shut-down' }));
  }
});
`;

type FromWorker =
  { type: 'exported'; id: number; code: ExportResultCode; error?: string } | { type: 'shut-down' };

/**
 * An OTLP/HTTP span exporter whose network I/O runs on a worker thread (DESIGN 81). The main
 * thread only serializes each batch (protobuf or JSON, as OTEL_EXPORTER_OTLP_PROTOCOL says) and
 * posts the bytes. Exporting from the request thread cost a third or more of what 10% sampling
 * cost the API: every export's HTTP client request ran through the same Node stream, socket and
 * http code as the server's responses, and its different object shapes deoptimized that hot
 * code once per export. A worker has its own isolate, so the server's code stays as optimized
 * as with tracing off. The thread holds the process open only while a batch is out.
 */
export class WorkerOtlpExporter implements SpanExporter {
  readonly #protocol: OtlpProtocol;
  readonly #serializer: typeof ProtobufTraceSerializer;
  readonly #pending = new Map<number, (result: ExportResult) => void>();
  readonly #idleWaiters: (() => void)[] = [];
  #worker: Worker | undefined;
  #nextId = 0;
  #stopped = false;
  #onShutDown: (() => void) | undefined;

  constructor(protocol: OtlpProtocol) {
    this.#protocol = protocol;
    this.#serializer = protocol === 'http/json' ? JsonTraceSerializer : ProtobufTraceSerializer;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    if (this.#stopped) {
      done({ code: ExportResultCode.FAILED, error: new Error('the exporter is shut down') });
      return;
    }
    const body = this.#serializer.serializeRequest(spans);
    if (body === undefined) {
      done({
        code: ExportResultCode.FAILED,
        error: new Error('the spans could not be serialized'),
      });
      return;
    }
    const id = ++this.#nextId;
    const worker = this.#thread();
    this.#pending.set(id, done);
    // While a batch is out the thread holds the process open, as the stock exporter's request
    // did: a CLI that ends right after its last span still sends it (bounded by the OTLP
    // timeout). Idle, it never does.
    if (this.#pending.size === 1) worker.ref();
    // Copied, not transferred: the serializer's bytes may be a view into a pooled buffer.
    worker.postMessage({ type: 'export', id, body });
  }

  /** Resolves when every export posted so far has been answered. */
  forceFlush(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Waits for the exports in flight (the caller bounds the wait), then ends the thread. */
  async shutdown(): Promise<void> {
    this.#stopped = true;
    const worker = this.#worker;
    if (!worker) return;
    await this.forceFlush();
    const shutDown = new Promise<void>((resolve) => {
      this.#onShutDown = resolve;
    });
    worker.postMessage({ type: 'shutdown' });
    await shutDown;
    this.#worker = undefined;
    await worker.terminate();
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Not the service's --import preload: the thread would start tracing (and a thread) itself.
      execArgv: [],
      workerData: {
        protocol: this.#protocol,
        exporterBase: require.resolve('@opentelemetry/otlp-exporter-base/node-http'),
        transformer: require.resolve('@opentelemetry/otlp-transformer'),
      },
    });
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'shut-down') {
        this.#onShutDown?.();
        return;
      }
      const failed = message.code !== ExportResultCode.SUCCESS;
      const error = failed
        ? new Error(message.error ?? 'the collector refused the spans')
        : undefined;
      reportSpanExport(error);
      this.#answer(message.id, { code: message.code, error });
    });
    // A thread that dies fails what it held; the next export starts a new one.
    const lost = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#onShutDown?.();
      for (const id of [...this.#pending.keys()]) {
        this.#answer(id, { code: ExportResultCode.FAILED, error });
      }
    };
    worker.on('error', lost);
    worker.on('exit', (code) => {
      lost(new Error(`the OTLP export thread exited (code ${String(code)})`));
    });
    // After the listeners: adding a 'message' listener references the thread again.
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #answer(id: number, result: ExportResult): void {
    const done = this.#pending.get(id);
    if (!done) return;
    this.#pending.delete(id);
    done(result);
    if (this.#pending.size === 0) {
      this.#worker?.unref();
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }
}
