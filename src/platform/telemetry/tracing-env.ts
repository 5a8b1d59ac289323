import { ConfigError } from '../config/config-error.js';

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

const EXPORTERS: readonly TraceExporterName[] = ['otlp', 'console'];

/**
 * The exporters the standard environment asks for (OTEL_TRACES_EXPORTER, a comma-separated
 * list), or [] when tracing is off: OTEL_SDK_DISABLED is true, or the variable is unset, empty
 * or `none`. A value this build does not ship (`jaeger`, a typo) is refused with one line
 * naming the setting, rather than leaving tracing silently off. Free of SDK imports, so the
 * preload can decide before loading the SDK at all.
 */
export function traceExporterNames(env: NodeJS.ProcessEnv): TraceExporterName[] {
  if (sdkDisabled(env)) return [];
  const names = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  if (names.length === 0 || (names.length === 1 && names[0] === 'none')) return [];
  const unknown = names.filter((name) => !(EXPORTERS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new ConfigError(
      'OTEL_TRACES_EXPORTER',
      `must list otlp or console (or be none); got ${JSON.stringify(env.OTEL_TRACES_EXPORTER)}`,
    );
  }
  return EXPORTERS.filter((name) => names.includes(name));
}

/** The spec's OTEL_TRACES_SAMPLER values the SDK ships. */
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/**
 * Checks OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG before the SDK reads them: the SDK
 * answers an unknown sampler or a bad ratio with a diagnostic nobody sees and falls back to
 * sampling everything (a typo in `parentbased_traceidratio` would record every request). Either
 * stops the process with one line naming the setting. The ratio may be left unset (the SDK's 1).
 */
export function checkSamplerSettings(env: NodeJS.ProcessEnv): void {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim() ?? '';
  if (sampler !== '' && !SAMPLERS.includes(sampler)) {
    throw new ConfigError(
      'OTEL_TRACES_SAMPLER',
      `must be one of ${SAMPLERS.join(', ')}; got ${JSON.stringify(env.OTEL_TRACES_SAMPLER)}`,
    );
  }
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim() ?? '';
  if (!sampler.endsWith('traceidratio') || arg === '') return;
  const ratio = Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError(
      'OTEL_TRACES_SAMPLER_ARG',
      `must be a ratio from 0 to 1 for ${sampler}; got ${JSON.stringify(env.OTEL_TRACES_SAMPLER_ARG)}`,
    );
  }
}

/** The OTLP encodings this build ships (the spec's OTEL_EXPORTER_OTLP_PROTOCOL values over HTTP). */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/**
 * The OTLP protocol for traces: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL, else the spec's default `http/protobuf` (less than half of JSON's bytes
 * per exported trace, DESIGN 80). `grpc` and anything else are refused with one line
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

/**
 * Checks the OTLP endpoint settings: the exporter takes a value that is not an http(s) URL as
 * unset and sends to localhost:4318, so a typo would lose every span without a word. One line
 * naming the setting instead.
 */
export function checkOtlpEndpoints(env: NodeJS.ProcessEnv): void {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    const value = env[name]?.trim() ?? '';
    if (value === '') continue;
    let protocol = '';
    try {
      protocol = new URL(value).protocol;
    } catch {
      // Not a URL at all: refused below.
    }
    if (protocol !== 'http:' && protocol !== 'https:') {
      throw new ConfigError(
        name,
        `must be an http(s) URL like http://collector:4318; got ${JSON.stringify(env[name])}`,
      );
    }
  }
}
