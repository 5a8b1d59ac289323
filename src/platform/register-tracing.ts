import { register } from 'node:module';
import path from 'node:path';
import { traceExporterName } from './tracing-env.js';

/**
 * Preloaded with `node --import ./dist/platform/register-tracing.js dist/apps/<role>/main.js`:
 * starts tracing before the application's modules load, and installs the ESM loader hook
 * (import-in-the-middle) through which the instrumentations patch ES modules. The service name
 * defaults to `payments-<role>` from the entry file's folder; OTEL_SERVICE_NAME overrides it.
 */
const role = path.basename(path.dirname(process.argv[1] ?? 'service'));
// Tracing off (no exporter): the SDK is not even loaded, and the service's spans stay the API's
// no-ops, as without the preload (DESIGN 79).
const tracing =
  traceExporterName(process.env) === null
    ? null
    : (await import('./start-tracing.js')).startTracing(`payments-${role}`);
if (tracing !== null) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  // CLIs end when their work is done: flush the last spans first. Services flush on SIGTERM
  // (shutdown.ts).
  process.once('beforeExit', () => void tracing.shutdown());
}
