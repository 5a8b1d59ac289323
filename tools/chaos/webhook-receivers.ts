import type { ReceiverMode, WebhookReceiver } from '../webhooks/receiver.js';
import { startReceiverSet, type ReceiverSet } from '../webhooks/start-receiver-set.js';
import type { Role } from './role-fleet.js';
import type { Timeline } from './timeline.js';

/**
 * The run's webhook settings. Retries 1 s ... 60 s (8 attempts over about 128 s, +-20%): a
 * delivery that met the failing or hanging receiver at the start of its window still has
 * attempts left after the window, and the last retry comes within verify's wait. A 2 s timeout
 * ends a hanging attempt soon; the lease must exceed it plus the 11 s query bound (boot refuses
 * less), so a SIGKILLed process's deliveries come back after 15 s.
 */
export const CHAOS_WEBHOOK_SETTINGS = {
  WEBHOOK_RETRY_SCHEDULE: '1s,2s,5s,10s,20s,30s,60s',
  WEBHOOK_TIMEOUT_MS: '2000',
  WEBHOOK_LEASE_MS: '15000',
} as const;

/** The receivers listen on loopback: the API (at creation) and the senders must allow it. */
const ALLOWED_NETWORKS = '127.0.0.0/8,::1/128';

/**
 * How long, from the webhooks role's SIGKILL, the failing receiver answers 500 and the hanging
 * one never answers (so the kill and both failures overlap however slowly the faults before it
 * ran). A delivery that meets either from its first attempt fails 5 of its 8 attempts (the
 * schedule's steps, each hanging one 2 s longer, at the shortest jitter): 2 attempts to spare for
 * a lease lost to a killed process or a frozen database (the claim counts one).
 */
export const FAIL_SECONDS = 30;
export const HANG_SECONDS = 40;

/** The webhook environment of a role process: the API creates endpoints, webhooks sends. */
export function webhookRoleEnv(role: Role): Record<string, string> {
  if (role === 'api') return { WEBHOOK_ALLOWED_NETWORKS: ALLOWED_NETWORKS };
  if (role === 'webhooks')
    return { WEBHOOK_ALLOWED_NETWORKS: ALLOWED_NETWORKS, ...CHAOS_WEBHOOK_SETTINGS };
  return {};
}

export interface ChaosReceivers {
  set: ReceiverSet;
  /** Per receiver, what it does, in the set's order. */
  labels: string[];
}

/**
 * Three receivers answering 2xx, each with an endpoint (every event type) for every merchant of
 * the run; `startFailures` turns the second into one answering 500 and the third into one never
 * answering (the sender's timeout ends each request) for a while. Their receipts files go to
 * `dir` (verify's --webhook-receipts).
 */
export async function startChaosReceivers(options: {
  dir: string;
  apiUrl: string;
  apiKeys: readonly string[];
}): Promise<ChaosReceivers> {
  const modes: ReceiverMode[] = [{ kind: 'ok' }, { kind: 'ok' }, { kind: 'ok' }];
  const set = await startReceiverSet({ modes, ...options });
  return {
    set,
    labels: [
      'answers 2xx',
      `answers 500 for ${FAIL_SECONDS} s from the webhooks SIGKILL`,
      `hangs for ${HANG_SECONDS} s from the webhooks SIGKILL`,
    ],
  };
}

/** Notes the receivers on the timeline. */
export function noteReceivers(receivers: ChaosReceivers, timeline: Timeline): void {
  const { set, labels } = receivers;
  timeline.note(
    `webhook receivers: ${set.receivers
      .map((receiver, i) => `${receiver.origin} ${labels[i] ?? ''}`)
      .join(', ')}; ${set.endpoints.flat().length} endpoints (each merchant at each receiver)`,
  );
}

/**
 * From now on the second receiver answers 500 for FAIL_SECONDS and the third never answers for
 * HANG_SECONDS; noted on the timeline now and at each recovery.
 */
export function startFailures(receivers: ChaosReceivers, timeline: Timeline): void {
  const [, failing, hanging] = receivers.set.receivers;
  const window = (receiver: WebhookReceiver | undefined, seconds: number, what: string) => {
    if (!receiver) return;
    const until = new Date(Date.now() + seconds * 1000);
    receiver.setMode(what === 'hangs' ? { kind: 'hang', until } : { kind: 'fail-until', until });
    timeline.note(`webhook receiver ${receiver.origin} ${what} for ${seconds} s`);
    setTimeout(() => {
      timeline.note(`webhook receiver ${receiver.origin} answers 2xx again`);
    }, seconds * 1000).unref();
  };
  window(failing, FAIL_SECONDS, 'answers 500');
  window(hanging, HANG_SECONDS, 'hangs');
}
