import { readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { UsageError } from '../../src/cli/run-cli.js';
import { createEndpointsFor } from '../webhooks/create-endpoints.js';
import { parseReceiverMode } from '../webhooks/parse-receiver-mode.js';
import { startWebhookReceiver } from '../webhooks/receiver.js';

const USAGE = `usage: npm run webhooks:receiver -- --receipts <file> [--port <n>] [--host <address>]
                         [--secret <whsec_...>]... [--secrets-file <file>] [--mode <mode>]
                         [--endpoints-for <api key>[,<api key>...] --api-url <url> [--events <types>]]
  --receipts      write one JSON line per request here (read by npm run verify --webhook-receipts)
  --port          port to listen on (default 0: any free one; the URL is printed)
  --host          address to listen on (default 127.0.0.1)
  --secret        a signing secret to verify with (repeatable)
  --secrets-file  one secret per line, read again whenever the file changes (for secrets
                  known only after the receiver started)
  --mode          ok (default) | fail-first:<n> | fail-for:<seconds> | hang-for:<seconds> | gone
  --endpoints-for for each merchant's API key, create an endpoint at <origin>/hooks/<token>/<n> through
                  the API at --api-url (POST /webhook_endpoints) and verify its requests with the
                  secret it answers (the API must allow the receiver's address:
                  WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8)
  --events        the endpoints' enabled_events, comma-separated (default *)
Prints {"msg":"webhook receiver listening",...}, then {"msg":"webhook receiver ready",...} once
its endpoints exist, and runs until SIGTERM or SIGINT.`;

/** `npm run webhooks:receiver`: a webhook endpoint that verifies and records (tools/webhooks). */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      receipts: { type: 'string' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string', multiple: true, default: [] },
      'secrets-file': { type: 'string' },
      mode: { type: 'string', default: 'ok' },
      'endpoints-for': { type: 'string' },
      'api-url': { type: 'string' },
      events: { type: 'string', default: '*' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!values.receipts) throw new UsageError('--receipts is required');
  if (!/^\d+$/.test(values.port) || Number(values.port) > 65535)
    throw new UsageError('--port must be a port number');
  const keys = (values['endpoints-for'] ?? '').split(',').filter((key) => key !== '');
  const apiUrl = values['api-url'];
  if (keys.length > 0 && !apiUrl) throw new UsageError('--endpoints-for needs --api-url');
  const fixed = values.secret;
  let mode;
  try {
    mode = parseReceiverMode(values.mode);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const secretsFile = values['secrets-file'];
  const receiver = await startWebhookReceiver({
    receiptsFile: values.receipts,
    host: values.host,
    port: Number(values.port),
    mode,
    secrets: fixed,
    ...(secretsFile ? { loadSecrets: secretsFromFile(secretsFile, fixed) } : {}),
  });
  process.stdout.write(
    `${JSON.stringify({ msg: 'webhook receiver listening', origin: receiver.origin, port: receiver.port })}\n`,
  );
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  try {
    const endpoints =
      apiUrl && keys.length > 0
        ? await createEndpointsFor(receiver, apiUrl, keys, values.events.split(','))
        : [];
    process.stdout.write(`${JSON.stringify({ msg: 'webhook receiver ready', endpoints })}\n`);
    await stopped;
  } finally {
    await receiver.close();
  }
}

/** The file's secrets (plus the fixed ones), read again when its mtime changes. */
function secretsFromFile(path: string, fixed: readonly string[]): () => readonly string[] {
  let seen = -1;
  let secrets: readonly string[] = fixed;
  return () => {
    let mtime: number;
    try {
      mtime = statSync(path).mtimeMs;
    } catch {
      return secrets;
    }
    if (mtime !== seen) {
      seen = mtime;
      const lines = readFileSync(path, 'utf8')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '');
      secrets = [...fixed, ...lines];
    }
    return secrets;
  };
}

try {
  await main();
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(error instanceof UsageError ? `${message}\n${USAGE}\n` : `${message}\n`);
  process.exitCode = 1;
}
