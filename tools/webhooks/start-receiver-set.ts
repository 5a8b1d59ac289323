import path from 'node:path';
import { createEndpointsFor, type CreatedEndpoint } from './create-endpoints.js';
import { startWebhookReceiver, type ReceiverMode, type WebhookReceiver } from './receiver.js';

export interface ReceiverSet {
  receivers: WebhookReceiver[];
  /** The receipts files, one per receiver: `npm run verify -- --webhook-receipts a,b,...`. */
  files: string[];
  /** Per receiver, the endpoint created for each merchant. */
  endpoints: CreatedEndpoint[][];
  close: () => Promise<void>;
}

/**
 * One receiver per mode, each writing `webhooks-<n>.jsonl` in `dir` and with an endpoint for
 * every merchant of `apiKeys` (created through the API at `apiUrl`): what k6/run.sh does with
 * WEBHOOKS=1, for a run driven from TypeScript (a chaos run: an answering, a failing and a
 * hanging receiver).
 */
export async function startReceiverSet(options: {
  modes: readonly ReceiverMode[];
  dir: string;
  apiUrl: string;
  apiKeys: readonly string[];
  enabledEvents?: readonly string[];
}): Promise<ReceiverSet> {
  const set: ReceiverSet = {
    receivers: [],
    files: [],
    endpoints: [],
    close: async () => {
      await Promise.all(set.receivers.map((receiver) => receiver.close()));
    },
  };
  try {
    for (const [index, mode] of options.modes.entries()) {
      const file = path.join(options.dir, `webhooks-${index + 1}.jsonl`);
      const receiver = await startWebhookReceiver({ mode, receiptsFile: file });
      set.receivers.push(receiver);
      set.files.push(file);
      set.endpoints.push(
        await createEndpointsFor(receiver, options.apiUrl, options.apiKeys, options.enabledEvents),
      );
    }
  } catch (error) {
    await set.close();
    throw error;
  }
  return set;
}
