import { ConfigError } from './config-error.js';

/** The trace exporters this build ships (OTEL_TRACES_EXPORTER values); anything else is off. */
export type TraceExporterName = 'otlp' | 'console';

/** The instrumentations this build ships, by the names the OTEL_NODE_* variables use. */
export const INSTRUMENTATIONS = ['pg', 'ioredis'] as const;
export type InstrumentationName = (typeof INSTRUMENTATIONS)[number];

/**
 * The instrumentations to register, from the variables of the OpenTelemetry Node
 * auto-instrumentations: OTEL_NODE_ENABLED_INSTRUMENTATIONS (only these; default all) minus
 * OTEL_NODE_DISABLED_INSTRUMENTATIONS, each a comma-separated list of names without the
 * `@opentelemetry/instrumentation-` prefix (`pg`, `ioredis`). Names this build does not ship
 * (`http`, `fs`...) are ignored, as upstream does: one list is often shared by every service of
 * a deployment. The ESM loader hook wraps only the packages returned here.
 */
export function enabledInstrumentations(env: NodeJS.ProcessEnv): InstrumentationName[] {
  const list = (name: string) =>
    (env[name] ?? '')
      .split(',')
      .map((item) => item.trim().toLowerCase())
      .filter((item) => item !== '');
  const enabled = list('OTEL_NODE_ENABLED_INSTRUMENTATIONS');
  const disabled = new Set(list('OTEL_NODE_DISABLED_INSTRUMENTATIONS'));
  return INSTRUMENTATIONS.filter(
    (name) => (enabled.length === 0 || enabled.includes(name)) && !disabled.has(name),
  );
}

/** OTEL_SDK_DISABLED=true: no tracing at all, whatever else is set. */
export function sdkDisabled(env: NodeJS.ProcessEnv): boolean {
  return env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
}

/**
 * The exporter the standard environment asks for, or null when tracing is off: OTEL_SDK_DISABLED
 * is true, or OTEL_TRACES_EXPORTER is unset, `none`, or an exporter this build does not ship.
 * Free of SDK imports, so the preload can decide before loading the SDK at all.
 */
export function traceExporterName(env: NodeJS.ProcessEnv): TraceExporterName | null {
  if (sdkDisabled(env)) return null;
  const name = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  return name === 'otlp' || name === 'console' ? name : null;
}

/** The OTLP encodings this build ships (the spec's OTEL_EXPORTER_OTLP_PROTOCOL values over HTTP). */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/**
 * The OTLP protocol for traces: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL, else the spec's default `http/protobuf` (less than half of JSON's bytes
 * per exported trace, DESIGN 79). `grpc` and anything else are refused with one line
 * naming the setting, as every other bad setting is.
 */
export function otlpProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const value = env[name]?.trim().toLowerCase();
    if (value === undefined || value === '') continue;
    if (value === 'http/protobuf' || value === 'http/json') return value;
    throw new ConfigError(
      name,
      `must be http/protobuf or http/json (grpc is not shipped); got ${JSON.stringify(env[name])}`,
    );
  }
  return 'http/protobuf';
}
