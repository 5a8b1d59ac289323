import { postPayment, type Answer, type TestApi } from './test-api.js';

/** One POST of a steady load: its key and body, when it was sent, and what came back. */
export interface LoadResult {
  key: string;
  body: { amount: number; currency: string };
  sentAtMs: number;
  latencyMs: number;
  answer: Answer;
}

/**
 * POSTs new payments (a fresh key each) at `ratePerSecond` for `durationMs`, without waiting
 * for answers before sending the next one (an open-loop load, as real clients are), and
 * resolves with every result once all are answered. `onTick` runs at each elapsed ms mark.
 */
export async function steadyLoad(
  api: TestApi,
  apiKey: string,
  options: { ratePerSecond: number; durationMs: number; keyPrefix: string },
): Promise<LoadResult[]> {
  const started = performance.now();
  const pending: Promise<LoadResult>[] = [];
  const intervalMs = 1_000 / options.ratePerSecond;
  for (let i = 0; performance.now() - started < options.durationMs; i++) {
    const due = started + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const key = `${options.keyPrefix}-${i}`;
    const body = { amount: 100 + i, currency: 'EUR' };
    const sentAt = performance.now();
    pending.push(
      postPayment(api, { apiKey, key, body }).then((answer) => ({
        key,
        body,
        sentAtMs: sentAt - started,
        latencyMs: performance.now() - sentAt,
        answer,
      })),
    );
  }
  return Promise.all(pending);
}

/** The q-quantile (0-1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
}

/** One line for the test's console: count, statuses, p50/p99/max latency. */
export function summarize(label: string, results: readonly LoadResult[]): string {
  const latencies = results.map((r) => r.latencyMs);
  const statuses: Record<number, number> = {};
  for (const r of results) statuses[r.answer.status] = (statuses[r.answer.status] ?? 0) + 1;
  const ms = (v: number) => `${Math.round(v)} ms`;
  return `${label}: ${results.length} requests ${JSON.stringify(statuses)} p50 ${ms(quantile(latencies, 0.5))} p99 ${ms(quantile(latencies, 0.99))} max ${ms(Math.max(...latencies))}`;
}

/** Prints a measurement line (the figures the issue asks for) to the test's output. */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}
