/** The trace exporters this build ships (OTEL_TRACES_EXPORTER values); anything else is off. */
export type TraceExporterName = 'otlp' | 'console';

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
