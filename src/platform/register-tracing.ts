import { register } from 'node:module';
import path from 'node:path';
import { startTracing } from './start-tracing.js';

/**
 * Preloaded with `node --import ./dist/platform/register-tracing.js dist/apps/<role>/main.js`:
 * starts tracing before the application's modules load, and installs the ESM loader hook
 * (import-in-the-middle) through which the instrumentations patch ES modules. The service name
 * defaults to `payments-<role>` from the entry file's folder; OTEL_SERVICE_NAME overrides it.
 */
const role = path.basename(path.dirname(process.argv[1] ?? 'service'));
const tracing = startTracing(`payments-${role}`);
if (tracing !== null) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  // CLIs end when their work is done: flush the last spans first. Services flush on SIGTERM
  // (shutdown.ts).
  process.once('beforeExit', () => void tracing.shutdown());
}
