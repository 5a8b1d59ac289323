import http from 'node:http';
import { percentile } from '../support/percentile.js';

/** One HTTP request of a load run. */
export interface Shot {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface RunResult {
  requests: number;
  seconds: number;
  perSecond: number;
  statuses: Record<string, number>;
  latencyMs: { p50: number; p95: number; p99: number; max: number };
}

/** Sends one request on a keep-alive agent; resolves with the status once the body is read. */
function fire(agent: http.Agent, port: number, shot: Shot): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        agent,
        method: shot.method,
        path: shot.path,
        headers: shot.headers,
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve(res.statusCode ?? 0);
        });
      },
    );
    req.on('error', reject);
    req.end(shot.body);
  });
}

/** Closed loop: `concurrency` workers each send, wait, send again, for `seconds`. */
export async function closedLoop(
  port: number,
  concurrency: number,
  seconds: number,
  next: (i: number) => Shot,
): Promise<RunResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let i = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const shot = next(i++);
        const t = performance.now();
        const status = await fire(agent, port, shot).catch(() => 0);
        latencies.push(performance.now() - t);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  agent.destroy();
  return summarize(latencies, statuses, (performance.now() - started) / 1000);
}

/**
 * Open loop: requests start at a constant `rate` whatever the answers do, as real clients
 * arrive, so a slow server shows up as latency instead of hiding behind fewer requests.
 */
export async function constantRate(
  port: number,
  rate: number,
  seconds: number,
  next: (i: number) => Shot,
): Promise<RunResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const total = Math.round(rate * seconds);
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const shot = next(i);
    // Latency counts from when the request was due, so queueing in the generator is included.
    inFlight.push(
      fire(agent, port, shot)
        .catch(() => 0)
        .then((status) => {
          latencies.push(performance.now() - due);
          statuses[status] = (statuses[status] ?? 0) + 1;
        }),
    );
  }
  await Promise.all(inFlight);
  agent.destroy();
  return summarize(latencies, statuses, (performance.now() - started) / 1000);
}

function summarize(
  latencies: number[],
  statuses: Record<string, number>,
  seconds: number,
): RunResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    requests: latencies.length,
    seconds: round(seconds),
    perSecond: round(latencies.length / seconds),
    statuses,
    latencyMs: {
      p50: round(percentile(sorted, 50)),
      p95: round(percentile(sorted, 95)),
      p99: round(percentile(sorted, 99)),
      max: round(sorted[sorted.length - 1] ?? 0),
    },
  };
}
