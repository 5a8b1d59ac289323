import type { RequestSample } from '../load/http-transport.js';
import type { RoleFleet } from './role-fleet.js';
import type { FaultWindow } from './fault-window.js';
import { sleep, type Timeline } from './timeline.js';
import type { WindowStats } from './window-stats.js';

/**
 * SIGTERM grace of each process in the rolling restart: above the service's shutdown bound
 * (SHUTDOWN_TIMEOUT_MS, 15 s, which includes the API's drain), so a SIGKILL here means the
 * process missed it.
 */
const TERMINATE_GRACE_MS = 20_000;
/** A replacement whose /readyz has not answered 200 by then is reported as not ready. */
const READYZ_WAIT_MS = 30_000;

/** What the rolling restart did to one process. */
export interface ReplacedProcess {
  name: string;
  /** The old process's exit: code 0 is a graceful shutdown within the bound. */
  exitCode: number | null;
  exitSignal: string | null;
  shutdownMs: number;
  /** The public /readyz right after the SIGTERM (APIs only): 503 `draining` expected. */
  drainingAnswer: string | null;
  readyMs: number;
  readyzOk: boolean;
}

/**
 * The log line that says a role process works (not only that it started): the API's "ready"
 * (its listener is open), the others' own line once their Kafka clients are connected.
 */
function readyMessage(role: string): string {
  return role === 'api' ? 'ready' : `${role} ready`;
}

/**
 * The rolling restart of a deploy (issue 28 item 3): every process of every role, one at a time,
 * gets SIGTERM, is waited for (its graceful shutdown: the API drains, the workers stop claiming
 * and finish or hand back their leases), then its replacement is started on the same ports and
 * waited for: its role's ready line, then its /readyz (public for the API, internal for all)
 * answering 200, before the next one. The storms keep running throughout.
 */
export async function rollingRestart(
  fleet: RoleFleet,
  timeline: Timeline,
): Promise<ReplacedProcess[]> {
  const replaced: ReplacedProcess[] = [];
  for (const name of fleet.names()) {
    const role = name.slice(0, name.lastIndexOf('-'));
    const env = fleet.env(name);
    const publicReadyz = role === 'api' ? `http://127.0.0.1:${env.PORT ?? ''}/readyz` : null;
    const internalReadyz = `http://127.0.0.1:${env.METRICS_PORT ?? ''}/readyz`;
    timeline.note(`rolling: SIGTERM ${name} (pid ${fleet.pid(name) ?? '-'})`);
    const exiting = fleet.terminate(name, TERMINATE_GRACE_MS);
    const drainingAnswer = publicReadyz === null ? null : await answerOf(publicReadyz);
    const exit = await exiting;
    const readyMs = await fleet.start(name, readyMessage(role));
    const readyzOk = await readyzAnswers200(
      publicReadyz === null ? [internalReadyz] : [publicReadyz, internalReadyz],
    );
    replaced.push({
      name,
      exitCode: exit.code,
      exitSignal: exit.signal,
      shutdownMs: exit.ms,
      drainingAnswer,
      readyMs,
      readyzOk,
    });
    timeline.note(
      `rolling: ${name} exited ${exit.signal ?? String(exit.code)} after ${exit.ms} ms` +
        `${drainingAnswer === null ? '' : ` (readyz after the SIGTERM: ${drainingAnswer})`}; ` +
        `replacement (pid ${fleet.pid(name) ?? '-'}) ready in ${readyMs} ms, ` +
        `/readyz ${readyzOk ? '200' : `NOT 200 within ${READYZ_WAIT_MS} ms`}`,
    );
  }
  return replaced;
}

/** `503 {"status":"draining"}`, or why there was no answer; bounded at 2 s. */
async function answerOf(url: string): Promise<string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return `${res.status} ${(await res.text()).trim()}`;
  } catch (error) {
    const cause = (error as { cause?: { code?: unknown } }).cause;
    return `no answer (${typeof cause?.code === 'string' ? cause.code : String(error)})`;
  }
}

async function readyzAnswers200(urls: readonly string[]): Promise<boolean> {
  const deadline = Date.now() + READYZ_WAIT_MS;
  for (const url of urls) {
    for (;;) {
      const answer = await answerOf(url);
      if (answer.startsWith('200 ')) break;
      if (Date.now() > deadline) return false;
      await sleep(100);
    }
  }
  return true;
}

/**
 * Whether the load sends a failed request again: every POST (the careful client's `send` in the
 * k6 scenarios' module k6/scenarios/careful-client.js, to the next API) and the refund storm's
 * reads (it polls until settled); the mix's read of its own payment is sent once.
 */
function retried(script: string, sample: RequestSample): boolean {
  return sample.name.startsWith('POST ') || script !== 'mix';
}

/**
 * The report's lines for the rolling restart: each process's shutdown and replacement, and the
 * requests it failed, split into those the client's retry absorbed and those it did not (the
 * mix's reads), plus the requests no retry resolved in the whole run (the load's
 * unresolved_requests).
 */
export function rollingRestartLines(
  replaced: readonly ReplacedProcess[],
  window: FaultWindow | undefined,
  stats: WindowStats | undefined,
  samplesByScript: readonly { script: string; samples: readonly RequestSample[] }[],
  startedAt: number,
  unresolvedRequests: number,
): string[] {
  if (!window) return [];
  const failed = samplesByScript.flatMap(({ script, samples }) =>
    samples
      .filter((sample) => {
        const endMs = sample.atMs - startedAt;
        const startMs = endMs - sample.durationMs;
        const inWindow = endMs >= window.startMs && startMs < window.endMs;
        return inWindow && (sample.status === 0 || sample.status >= 500);
      })
      .map((sample) => ({ script, sample })),
  );
  const byName = new Map<string, number>();
  for (const { script, sample } of failed) {
    const key = `${script}: ${sample.status === 0 ? 'no answer' : String(sample.status)} ${sample.name}`;
    byName.set(key, (byName.get(key) ?? 0) + 1);
  }
  const absorbed = failed.filter(({ script, sample }) => retried(script, sample)).length;
  const notRetried = failed.length - absorbed;
  const graceful = replaced.filter((p) => p.exitCode === 0).length;
  const lines = [
    '',
    `Rolling restart (${((window.endMs - window.startMs) / 1000).toFixed(1)} s, ${replaced.length} processes one at a time; ${graceful} exited 0)`,
  ];
  for (const p of replaced) {
    lines.push(
      `  ${p.name.padEnd(14)} exit ${p.exitSignal ?? String(p.exitCode)} after ${String(p.shutdownMs).padStart(6)} ms  ` +
        `ready in ${String(p.readyMs).padStart(6)} ms  /readyz ${p.readyzOk ? '200' : 'NOT 200'}` +
        (p.drainingAnswer === null ? '' : `  readyz on SIGTERM: ${p.drainingAnswer}`),
    );
  }
  lines.push(
    `  requests in flight during it: ${stats?.posts ?? 0} POST /payments, ${failed.length} answered 5xx or not at all`,
    `    absorbed by the client's retry (POSTs sent again to the next API, polled reads): ${absorbed}`,
    `    failed beyond the retry (the mix's read of its own payment, sent once): ${notRetried}`,
  );
  for (const [name, n] of [...byName].sort(([, a], [, b]) => b - a)) {
    lines.push(`      ${String(n).padStart(6)}  ${name}`);
  }
  lines.push(
    `    requests no retry resolved in the whole run (the load's unresolved_requests): ${unresolvedRequests}`,
  );
  return lines;
}

/** A process that did not shut down gracefully within the bound, or whose replacement never
 * answered /readyz 200, fails the run. */
export function rollingRestartFailures(replaced: readonly ReplacedProcess[] = []): string[] {
  return replaced.flatMap((p) => [
    ...(p.exitCode === 0
      ? []
      : [`rolling restart: ${p.name} exited ${p.exitSignal ?? String(p.exitCode)} on SIGTERM`]),
    ...(p.readyzOk ? [] : [`rolling restart: ${p.name}'s replacement never answered /readyz 200`]),
  ]);
}
