import { register } from 'node:module';
import path from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { enabledInstrumentations, traceExporterNames } from './tracing-env.js';

/**
 * Preloaded with `node --import ./dist/platform/telemetry/register-tracing.js dist/apps/<role>/main.js`:
 * starts tracing before the application's modules load, and installs the ESM loader hook
 * (import-in-the-middle) through which the instrumentations patch ES modules. The service name
 * defaults to `payments-<role>` from the entry file's folder; OTEL_SERVICE_NAME overrides it.
 */
const role = path.basename(path.dirname(process.argv[1] ?? 'service'));
// Tracing off (no exporter): the SDK is not even loaded, and the service's spans stay the API's
// no-ops, as without the preload (DESIGN 80).
const tracing = await startOrExit(`payments-${role}`);
const instrumented = enabledInstrumentations(process.env);
if (tracing !== null && instrumented.length > 0) {
  // Only the instrumented packages go through import-in-the-middle: wrapping every module (the
  // default) cost 20 MB of the traced API's peak RSS and start-up time, for nothing (DESIGN 80).
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, {
    data: { include: instrumented },
  });
}
if (tracing !== null) {
  // CLIs end when their work is done: flush the last spans first. Services flush on SIGTERM
  // (shutdown.ts).
  process.once('beforeExit', () => void tracing.shutdown());
}

/** Starts tracing; a bad OTEL_* setting stops the process with one line naming it. */
async function startOrExit(serviceName: string) {
  try {
    if (traceExporterNames(process.env).length === 0) return null;
    return (await import('./start-tracing.js')).startTracing(serviceName);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
