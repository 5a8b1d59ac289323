import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, rmdirSync } from 'node:fs';
import path from 'node:path';
import type { RequestSample } from '../load/http-transport.js';
import { readRequestSamples } from '../load/request-samples.js';
import type { ChaosOptions } from './chaos-options.js';
import type { LoadResult } from './load-results.js';
import { readLoadCounts } from './load-results.js';
import { ENTRY_POINTS } from './repo-root.js';

/** Clients retry this often before giving up on a request: long enough to outlast every fault. */
const CLIENT_MAX_ATTEMPTS = 40;
/**
 * How far past 4 x --duration a scenario may run before it ends on its own. Chaos stops the load
 * at the end of its timeline, which slow restarts stretch (--duration 60 with every fault: about
 * 265 s on a busy machine), so the cap lies far beyond it and only bounds a driver left behind by
 * a chaos run that was itself killed.
 */
const CAP_MARGIN_SECONDS = 900;

export type LoadScenario = 'storm' | 'mix' | 'refund-storm' | 'capture-race';

export interface LoadProcess {
  /** k6/scenarios/<scenario>.js, run by the project's driver (tools/cli/load.ts). */
  scenario: LoadScenario;
  env: Record<string, string>;
  /** Every request (JSON lines, tools/load/request-samples.ts) and the summary (LoadSummary). */
  samplesPath: string;
  summaryPath: string;
  /** The driver's stdout and stderr. */
  outputPath: string;
}

export interface RunningLoad {
  load: LoadProcess;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/**
 * Starts the chaos run's load, each scenario in a driver process of its own: the duplicate
 * storm (each key's copies spread over the APIs), the mix with the simulator's failure tokens,
 * the refund storm and the capture race. They run until `stopLoads` (SIGINT).
 */
export function startChaosLoad(input: {
  root: string;
  runDir: string;
  runId: string;
  apiKeys: readonly string[];
  apiUrls: readonly string[];
  options: ChaosOptions;
}): RunningLoad[] {
  const { options } = input;
  const capSeconds = options.durationSeconds * 4 + CAP_MARGIN_SECONDS;
  const common = {
    API_KEYS: input.apiKeys.join(','),
    BASE_URLS: input.apiUrls.join(','),
    MAX_ATTEMPTS: String(CLIENT_MAX_ATTEMPTS),
    // The driver's own receivers and verify stay off whatever the caller exported: chaos runs both.
    WEBHOOKS: '0',
    VERIFY: '0',
  };
  const start = (scenario: LoadScenario, extra: Record<string, string>) =>
    startLoad(input.root, {
      scenario,
      env: { ...common, RUN_ID: `${input.runId}-${scenario}`, ...extra },
      samplesPath: path.join(input.runDir, `load-${scenario}.samples.jsonl`),
      summaryPath: path.join(input.runDir, `load-${scenario}-summary.json`),
      outputPath: path.join(input.runDir, `load-${scenario}.out`),
    });
  return [
    start('storm', {
      // Far more keys than the run gets through: the storm runs for the whole duration.
      KEYS: '1000000',
      COPIES: String(options.copies),
      VUS: String(options.stormVus),
      MAX_DURATION: `${capSeconds}s`,
    }),
    start('mix', {
      RATE: String(options.rate),
      DURATION: `${capSeconds}s`,
      // Room for every request of a frozen dependency's window to be in flight at once.
      VUS: String(Math.max(20, options.rate * 3)),
    }),
    start('refund-storm', {
      // One payment at a time, each settled, then 4 x 2 refunds of a quarter (half of them
      // refused), every refund sent twice at once to two APIs: refunds racing across replicas
      // while the faults hit, and verify judges the money (never above the amount, each refund
      // at the acquirer once).
      PAYMENTS: '1000000',
      VUS: '1',
      PARTS: '4',
      OVERSHOOT: '2',
      COPIES: '2',
      SETTLE_WAIT_S: '60',
      MAX_DURATION: `${capSeconds}s`,
    }),
    start('capture-race', {
      // Manual payments (issue 40), one at a time: each authorized, then 2 captures and 2
      // cancels racing, every key sent twice to two APIs; every 4th is left for its window
      // (CHAOS_AUTHORIZATION_WINDOW_SECONDS) to expire. verify judges the holds' books.
      PAYMENTS: '1000000',
      VUS: '1',
      CAPTURES: '2',
      CANCELS: '2',
      COPIES: '2',
      EXPIRE_EVERY: '4',
      SETTLE_WAIT_S: '120',
      MAX_DURATION: `${capSeconds}s`,
    }),
  ];
}

/**
 * Starts one scenario on the driver. Its thresholds encode the normal-day objectives, so under
 * faults it usually exits 1 (thresholds crossed): the caller reads the samples and counters.
 */
export function startLoad(root: string, load: LoadProcess): RunningLoad {
  const output = createWriteStream(load.outputPath);
  const child = spawn(
    process.execPath,
    [
      path.join(root, ENTRY_POINTS.load),
      load.scenario,
      '--samples',
      load.samplesPath,
      '--summary',
      load.summaryPath,
    ],
    { cwd: root, env: { ...process.env, ...load.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Both streams into one file: neither may end it (the other would write after its end and
  // crash the run); it ends once the child's streams are closed.
  child.stdout.pipe(output, { end: false });
  child.stderr.pipe(output, { end: false });
  child.on('close', () => {
    output.end();
    // The driver makes reports/<RUN_ID>/ for its default summary; chaos keeps everything in its
    // own folder, so an empty one goes (a non-empty one stays).
    try {
      rmdirSync(path.join(root, 'reports', load.env.RUN_ID ?? ''));
    } catch {
      // Not empty, or not there.
    }
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('error', () => {
      resolve(null);
    });
    child.on('close', (code) => {
      resolve(code);
    });
  });
  return { load, child, exited };
}

/** Whether the process is still running (neither exited nor killed by a signal). */
export function isRunning(run: RunningLoad): boolean {
  return run.child.exitCode === null && run.child.signalCode === null;
}

/**
 * Stops every scenario as Ctrl-C does (SIGINT: requests in flight are cut short, the summary is
 * written) and waits for the exits: 0 every threshold held, 1 one was crossed, 2 could not run.
 */
export async function stopLoads(runs: readonly RunningLoad[]): Promise<(number | null)[]> {
  for (const run of runs) if (isRunning(run)) run.child.kill('SIGINT');
  return Promise.all(runs.map((run) => run.exited));
}

/** Each scenario's requests (an unreadable samples file counts as none). */
export async function readLoadSamples(
  runs: readonly RunningLoad[],
): Promise<{ script: string; samples: RequestSample[] }[]> {
  return Promise.all(
    runs.map(async (run) => ({
      script: run.load.scenario,
      samples: await readRequestSamples(run.load.samplesPath).catch(() => []),
    })),
  );
}

/** What each scenario reported, for the report and the judgement. */
export function loadResults(
  runs: readonly RunningLoad[],
  exitCodes: readonly (number | null)[],
): LoadResult[] {
  return runs.map((run, i) => ({
    scenario: run.load.scenario,
    exitCode: exitCodes[i] ?? null,
    summary: readLoadCounts(run.load.summaryPath, run.load.scenario),
  }));
}
