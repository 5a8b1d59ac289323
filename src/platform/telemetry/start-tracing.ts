import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { setTracingShutdown } from './tracing.js';
import {
  checkOtlpEndpoints,
  checkSamplerSettings,
  enabledInstrumentations,
  otlpProtocol,
  sdkDisabled,
  traceExporterNames,
  type InstrumentationName,
  type TraceExporterName,
} from './tracing-env.js';
import { WorkerOtlpExporter } from './worker-otlp-exporter.js';

export interface TracingHandle {
  /** Flushes the spans still queued and stops the provider. */
  shutdown: () => Promise<void>;
}

export interface TracingOptions {
  /** Tests: spans go here, each as it ends (no batching), whatever OTEL_TRACES_EXPORTER says. */
  exporter?: SpanExporter;
}

/**
 * Starts OpenTelemetry tracing from the standard environment variables, or does nothing:
 * - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER unset or `none`: no provider, so every span
 *   is the API's no-op (tracing off costs nothing measurable, see DESIGN); the variable may list
 *   both exporters (`otlp,console`), and an exporter this build does not ship stops the start;
 * - OTEL_TRACES_EXPORTER=otlp: OTLP over HTTP (OTEL_EXPORTER_OTLP_ENDPOINT or
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, default http://localhost:4318), batched, protobuf unless
 *   OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says http/json (otlpProtocol), sent from a worker
 *   thread (WorkerOtlpExporter);
 * - OTEL_TRACES_EXPORTER=console: spans printed to stdout (debugging);
 * - OTEL_TRACES_SAMPLER/OTEL_TRACES_SAMPLER_ARG: read by the SDK (default parentbased_always_on),
 *   checked first (checkSamplerSettings: the SDK would fall back to sampling everything);
 * - OTEL_SERVICE_NAME/OTEL_RESOURCE_ATTRIBUTES: the resource (default service name `defaultName`).
 * Also registers the pg and ioredis instrumentations (OTEL_NODE_ENABLED_INSTRUMENTATIONS /
 * OTEL_NODE_DISABLED_INSTRUMENTATIONS pick, enabledInstrumentations): they patch only modules
 * loaded after this call, which is why the processes start tracing first (register-tracing.ts via --import).
 * The graceful shutdown flushes the provider (shutdownTracing).
 */
export function startTracing(
  defaultName: string,
  options: TracingOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): TracingHandle | null {
  if (sdkDisabled(env)) return null;
  const exporters = traceExporterNames(env);
  if (!options.exporter && exporters.length === 0) return null;
  checkSamplerSettings(env);
  if (exporters.includes('otlp')) checkOtlpEndpoints(env);
  const spanProcessors = options.exporter
    ? [new SimpleSpanProcessor(options.exporter)]
    : exporters.map((name) => spanProcessor(name, env));
  const detected = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: defaultName }).merge(detected);
  const provider = new NodeTracerProvider({ resource, spanProcessors });
  provider.register();
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: enabledInstrumentations(env).map(instrumentation),
  });
  const shutdown = async () => {
    unregister();
    await provider.shutdown();
  };
  setTracingShutdown(shutdown);
  return { shutdown };
}

function instrumentation(name: InstrumentationName): Instrumentation {
  switch (name) {
    case 'pg':
      // No span per pool checkout: a wait for a connection shows as the gap before the query.
      return new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true });
    case 'ioredis':
      // The command name only: the default statement copies keys (merchant ids, idempotency
      // keys) into every span and costs a serialization per command.
      return new IORedisInstrumentation({
        requireParentSpan: true,
        dbStatementSerializer: (command) => command,
      });
  }
}

function spanProcessor(name: TraceExporterName, env: NodeJS.ProcessEnv): BatchSpanProcessor {
  if (name === 'console') return new BatchSpanProcessor(new ConsoleSpanExporter());
  return new BatchSpanProcessor(new WorkerOtlpExporter(otlpProtocol(env)));
}
