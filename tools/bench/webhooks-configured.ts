import { closedLoop, type Shot } from './load.js';
import { percentile } from '../support/percentile.js';

/**
 * Issue 27: the API's new-payment throughput with webhook endpoints configured for the merchant
 * against the same merchant without any, on one API process, interleaved. Three arms in short
 * closed-loop slices, the order rotating every cycle (as interleaved.ts does with processes):
 * - `without`: the merchant has no endpoint (the reference);
 * - `without again (A/A)`: the same state once more: what it "costs" is the noise floor;
 * - `with`: the merchant has `endpoints` endpoints (one '*', the others a subset of the types),
 *   created through POST /webhook_endpoints before the slice and deleted after it, untimed.
 * The POST /payments path writes no webhook rows (only result events fan out, in settlement's
 * transaction), and bench:api runs no settlement: this measures the request path alone.
 * Each arm's throughput is compared with the `without` slice of the same cycle; the median of
 * those per-cycle ratios and its 95% interval say whether a drop is beyond the noise, and the
 * A/A arm shows how far a no-change arm lands from 100% on this machine at this moment.
 */

export interface WebhooksConfiguredSettings {
  cycles: number;
  sliceSeconds: number;
  concurrency: number;
  /** Endpoints the `with` arm configures (>= 1; the first subscribes to '*'). */
  endpoints: number;
  /** Where the endpoints point: a loopback listener the API's WEBHOOK_ALLOWED_NETWORKS allows. */
  receiverUrl: string;
}

export const ARMS = ['without', 'without again (A/A)', 'with'] as const;
export type Arm = (typeof ARMS)[number];

export interface ArmSlice {
  cycle: number;
  arm: Arm;
  perSecond: number;
  p99Ms: number;
}

export interface ArmSummary {
  arm: Arm;
  perSecondMedian: number;
  p99MsMedian: number;
  /** Arm / `without` new payments/s in the same cycle, median over cycles (%). */
  ratioPct: number;
  /** The middle half of the per-cycle ratios (%): how far one cycle can be trusted. */
  ratioIqrPct: [number, number];
  ratioRangePct: [number, number];
  /**
   * The distribution-free 95% confidence interval of the median ratio (order statistics of the
   * per-cycle ratios): a drop "beyond noise" is one whose interval stays below 100%.
   */
  ratioCi95Pct: [number, number];
}

export interface WebhooksConfiguredResult {
  settings: Omit<WebhooksConfiguredSettings, 'receiverUrl'>;
  summary: ArmSummary[];
  /**
   * No drop beyond noise: the 95% interval of the `with` arm's median ratio reaches 100% (and
   * every request was accepted). The A/A arm's interval should contain 100% too: if it does
   * not, the slices are biased and the run says nothing (`controlHolds`).
   */
  pass: boolean;
  controlHolds: boolean;
  slices: ArmSlice[];
  unexpectedStatuses: Record<string, number>;
}

const SUBSCRIPTIONS: readonly (readonly string[])[] = [
  ['*'],
  ['payment.settled', 'payment.failed'],
  ['refund.succeeded', 'refund.failed'],
];

const round1 = (n: number) => Math.round(n * 10) / 10;
const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);

/** The 95% interval of the median of `values` (sorted): the order statistics k and n-1-k. */
function medianCi95(values: readonly number[]): [number, number] {
  const n = values.length;
  const k = Math.max(0, Math.floor((n - 1.96 * Math.sqrt(n)) / 2));
  return [values[k] ?? Number.NaN, values[n - 1 - k] ?? Number.NaN];
}

/** One request to the API with the merchant's key, bounded; resolves with status and body. */
async function call(
  port: number,
  apiKey: string,
  method: 'POST' | 'DELETE',
  urlPath: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}${urlPath}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
}

async function configure(port: number, apiKey: string, s: WebhooksConfiguredSettings) {
  const ids: string[] = [];
  for (let i = 0; i < s.endpoints; i += 1) {
    const { status, json } = await call(port, apiKey, 'POST', '/webhook_endpoints', {
      url: `${s.receiverUrl}/hooks/${i}`,
      enabled_events: SUBSCRIPTIONS[i % SUBSCRIPTIONS.length],
      description: `bench endpoint ${i}`,
    });
    const id = (json as { id?: unknown } | null)?.id;
    if (status !== 201 || typeof id !== 'string') {
      throw new Error(`POST /webhook_endpoints answered ${status}: ${JSON.stringify(json)}`);
    }
    ids.push(id);
  }
  return ids;
}

async function unconfigure(port: number, apiKey: string, ids: string[]): Promise<void> {
  for (const id of ids.splice(0)) {
    const { status } = await call(port, apiKey, 'DELETE', `/webhook_endpoints/${id}`);
    if (status !== 200) throw new Error(`DELETE /webhook_endpoints/${id} answered ${status}`);
  }
}

export async function measureWebhooksConfigured(
  port: number,
  apiKey: string,
  settings: WebhooksConfiguredSettings,
  newPayment: () => Shot,
  say: (line: string) => void,
): Promise<WebhooksConfiguredResult> {
  const { sliceSeconds, concurrency } = settings;
  // Whole rotations only, so each arm runs as often in each position of a cycle.
  const cycles = Math.ceil(settings.cycles / ARMS.length) * ARMS.length;
  const slices: ArmSlice[] = [];
  const unexpected: Record<string, number> = {};
  const configured: string[] = [];
  // Both states once before measuring, a slice of load each, discarded: the endpoint routes'
  // first calls and the pause after the previous scenario are not in a measured slice (the
  // first measured slice ran at half the others' rate without it).
  configured.push(...(await configure(port, apiKey, settings)));
  await closedLoop(port, concurrency, sliceSeconds, newPayment);
  await unconfigure(port, apiKey, configured);
  await closedLoop(port, concurrency, sliceSeconds, newPayment);
  try {
    for (let cycle = 0; cycle < cycles; cycle += 1) {
      for (let i = 0; i < ARMS.length; i += 1) {
        const arm = ARMS[(cycle + i) % ARMS.length] as Arm;
        if (arm === 'with' && configured.length === 0) {
          configured.push(...(await configure(port, apiKey, settings)));
        } else if (arm !== 'with' && configured.length > 0) {
          await unconfigure(port, apiKey, configured);
        }
        const result = await closedLoop(port, concurrency, sliceSeconds, newPayment);
        for (const [status, count] of Object.entries(result.statuses)) {
          if (!status.startsWith('2')) unexpected[status] = (unexpected[status] ?? 0) + count;
        }
        slices.push({ cycle, arm, perSecond: result.perSecond, p99Ms: result.latencyMs.p99 });
      }
      if ((cycle + 1) % 5 === 0) say(`webhooks configured: cycle ${cycle + 1}/${cycles}`);
    }
  } finally {
    await unconfigure(port, apiKey, configured).catch((error: unknown) => {
      say(`could not delete the bench's webhook endpoints: ${String(error)}`);
    });
  }
  const of = (arm: Arm) => slices.filter((slice) => slice.arm === arm);
  const summary = ARMS.map((arm): ArmSummary => {
    const ratios = sorted(
      of(arm).map((slice) => {
        const ref = of('without').find((r) => r.cycle === slice.cycle);
        return ref && ref.perSecond > 0 ? (slice.perSecond / ref.perSecond) * 100 : 100;
      }),
    );
    return {
      arm,
      perSecondMedian: round1(percentile(sorted(of(arm).map((s) => s.perSecond)), 50)),
      p99MsMedian: round1(percentile(sorted(of(arm).map((s) => s.p99Ms)), 50)),
      ratioPct: round1(percentile(ratios, 50)),
      ratioIqrPct: [round1(percentile(ratios, 25)), round1(percentile(ratios, 75))],
      ratioRangePct: [round1(ratios[0] ?? 100), round1(ratios[ratios.length - 1] ?? 100)],
      ratioCi95Pct: medianCi95(ratios).map(round1) as [number, number],
    };
  });
  const control = summary.find((s) => s.arm === 'without again (A/A)');
  const hooked = summary.find((s) => s.arm === 'with');
  return {
    settings: { cycles, sliceSeconds, concurrency, endpoints: settings.endpoints },
    summary,
    pass:
      hooked !== undefined && Object.keys(unexpected).length === 0 && hooked.ratioCi95Pct[1] >= 100,
    controlHolds:
      control !== undefined && control.ratioCi95Pct[0] <= 100 && control.ratioCi95Pct[1] >= 100,
    slices,
    unexpectedStatuses: unexpected,
  };
}

/** The webhook A/B's lines of bench:api's table: each arm's medians and its ratio to `without`. */
export function webhookTableRows(result: WebhooksConfiguredResult): string[] {
  const { cycles, sliceSeconds, endpoints } = result.settings;
  const label: Record<Arm, string> = {
    without: 'not configured',
    'without again (A/A)': 'not configured (A/A)',
    with: `configured (${endpoints} endpoints)`,
  };
  return result.summary.map((s) => {
    const spread = `95% CI ${s.ratioCi95Pct[0]}-${s.ratioCi95Pct[1]}%, middle half ${s.ratioIqrPct[0]}-${s.ratioIqrPct[1]}%, range ${s.ratioRangePct[0]}-${s.ratioRangePct[1]}%`;
    const versus =
      s.arm === 'without'
        ? 'reference'
        : `${s.ratioPct}% of not configured (${spread})` +
          (s.arm === 'with' ? `; no drop beyond noise: ${result.pass ? 'yes' : 'NO'}` : '') +
          (s.arm === 'with' || result.controlHolds ? '' : '; A/A off 100%: slices biased');
    const name = `new payments, webhooks ${label[s.arm]}, median of ${cycles} interleaved ${sliceSeconds} s slices`;
    return `| ${name} | ${s.perSecondMedian} | - | - | ${s.p99MsMedian} | ${versus} |`;
  });
}

/** The row of `npm run bench`'s table (tools/cli/bench.ts's Row): `with` against `without`. */
export function webhooksConfiguredBenchRow(result: WebhooksConfiguredResult | null | undefined) {
  const measure = 'new payments with webhooks configured (closed loop, same API process)';
  const target = 'no drop beyond noise (95% CI of the median ratio reaches 100%)';
  const of = (arm: Arm) => result?.summary.find((s) => s.arm === arm);
  const [without, control, hooked] = [of('without'), of('without again (A/A)'), of('with')];
  if (!result || !without || !control || !hooked) {
    return { measure, value: 'not measured', reference: '-', ratio: '-', target, pass: false };
  }
  const { cycles, sliceSeconds, endpoints } = result.settings;
  const unexpected = Object.keys(result.unexpectedStatuses).length
    ? `; unexpected statuses ${JSON.stringify(result.unexpectedStatuses)}`
    : '';
  return {
    measure: `${measure}: ${endpoints} endpoints, ${cycles} interleaved cycles of ${sliceSeconds} s`,
    value: `${Math.round(hooked.perSecondMedian).toLocaleString('en')}/s (median slice); p99 ${hooked.p99MsMedian} ms${unexpected}`,
    reference: `without, same run: ${Math.round(without.perSecondMedian).toLocaleString('en')}/s, p99 ${without.p99MsMedian} ms; A/A control ${control.ratioPct}% (95% CI ${control.ratioCi95Pct[0]}-${control.ratioCi95Pct[1]}%${result.controlHolds ? '' : ': biased, run inconclusive'})`,
    ratio: `${hooked.ratioPct}% (95% CI ${hooked.ratioCi95Pct[0]}-${hooked.ratioCi95Pct[1]}%)`,
    target,
    pass: result.pass && result.controlHolds,
  };
}
