import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { RequestSample } from '../load/http-transport.js';
import { AcceptedLedger } from './accepted-ledger.js';
import type { FaultWindow } from './fault-window.js';
import { ENTRY_POINTS } from './repo-root.js';
import { runCommand } from './run-command.js';
import type { Timeline } from './timeline.js';

/** New payments per second of the ledger's client, on top of the load driver's scenarios. */
const LEDGER_PER_SECOND = 20;
/** verify --webhook-grace at a checkpoint: deliveries queued this long may still be pending. */
const CHECKPOINT_WEBHOOK_GRACE_SECONDS = 900;

interface Checkpoint {
  window: FaultWindow;
  accepted: number;
  missing: string[];
  verifyExit: number | null;
  verifyTail: string;
}

/**
 * What `npm run chaos -- --ha` adds to a run (issue 39): the ledger of accepted payments for the
 * whole load, and after each leader kill a checkpoint: every 202 so far looked up in the (maybe
 * promoted) database, and `verify --wait --until <now>` judging every payment created so far
 * (one charge each, every committed event on the topic, order kept) while the load goes on.
 * The report gives each phase's unavailability: the seconds in which some request got a 5xx or
 * no answer, and the recovery time (from the kill to the last such request).
 */
export class HaRun {
  private ledger: AcceptedLedger | null = null;
  private readonly checkpoints: Checkpoint[] = [];
  private final: { accepted: number; missing: string[] } | null = null;

  constructor(
    private readonly input: {
      root: string;
      runId: string;
      /** The run's report directory: each checkpoint's verify output is kept there. */
      runDir: string;
      env: NodeJS.ProcessEnv;
      db: pg.Pool;
      timeline: Timeline;
      verifyWaitSeconds: number;
    },
  ) {}

  startLedger(apiUrls: readonly string[], apiKey: string): void {
    this.ledger = new AcceptedLedger({
      apiUrls,
      apiKey,
      runId: this.input.runId,
      perSecond: LEDGER_PER_SECOND,
    });
    this.ledger.start();
    this.input.timeline.note(
      `ledger client: ${LEDGER_PER_SECOND} new payments/s, each key retried until accepted; every 202 is looked up after each kill`,
    );
  }

  /** After one leader kill was undone: every 202 so far, and verify of every payment so far. */
  async checkpoint(window: FaultWindow): Promise<void> {
    const { timeline } = this.input;
    const until = new Date();
    const { judged: accepted, missing } = this.ledger
      ? await this.ledger.missing(this.input.db)
      : { judged: 0, missing: [] };
    const verify = await runCommand(
      process.execPath,
      [
        path.join(this.input.root, ENTRY_POINTS.verify),
        '--wait',
        String(this.input.verifyWaitSeconds),
        '--grace',
        '0',
        // The load goes on through a checkpoint, and on two cores the webhooks role runs
        // minutes behind it: a delivery still queued is judged by the final verify, once the
        // load has stopped and the pipeline drained (a lost one is pending or missing there).
        '--webhook-grace',
        String(CHECKPOINT_WEBHOOK_GRACE_SECONDS),
        '--until',
        until.toISOString(),
      ],
      {
        cwd: this.input.root,
        env: this.input.env,
        timeoutMs: (this.input.verifyWaitSeconds + 300) * 1000,
      },
    );
    const text = `${verify.stderr}${verify.stdout}`.trimEnd();
    await writeFile(
      path.join(this.input.runDir, `verify-after-${String(this.checkpoints.length + 1)}.txt`),
      `${text}\n`,
    );
    // Its verdict: the violations line (or its last line when it could not judge).
    const output = text.split('\n');
    const verifyTail = (
      output.find((line) => line.trim().startsWith('violations')) ??
      output[output.length - 1] ??
      ''
    ).trim();
    this.checkpoints.push({
      window,
      accepted,
      missing: missing.map((m) => `${m.key} -> ${m.paymentId}`),
      verifyExit: verify.code,
      verifyTail,
    });
    timeline.note(
      `checkpoint after "${window.fault.label}": ${accepted - missing.length} of ${accepted} accepted payments found; ` +
        `verify of every payment before ${until.toISOString()} exited ${verify.code ?? 'by a signal'}`,
    );
  }

  /** Stops the ledger client and looks up every payment it was ever answered 202 for. */
  async stopLedger(): Promise<RequestSample[]> {
    if (!this.ledger) return [];
    await this.ledger.stop();
    const { judged, missing } = await this.ledger.missing(this.input.db);
    this.final = { accepted: judged, missing: missing.map((m) => `${m.key} -> ${m.paymentId}`) };
    this.input.timeline.note(
      `ledger stopped: ${judged - missing.length} of ${judged} accepted payments found`,
    );
    return this.ledger.samples;
  }

  /** The phases' lines for the report, and why the run failed (empty: it did not). */
  summary(
    samples: readonly RequestSample[],
    startedAt: number,
    windows: readonly FaultWindow[],
  ): { lines: string[]; failures: string[] } {
    const failed = samples
      .filter((s) => s.status === 0 || s.status >= 500)
      .map((s) => s.atMs - startedAt)
      .sort((a, b) => a - b);
    const lines = [
      '',
      'Leader kills (HA topology): unavailability = seconds in which some request got a 5xx or no answer,',
      'from the kill until the next kill; recovery = from the kill to the last such request',
      `  ${'phase'.padEnd(36)} ${'unavail.'.padStart(9)} ${'recovery'.padStart(9)} ${'202s'.padStart(6)} ${'lost'.padStart(5)}  verify`,
    ];
    const failures: string[] = [];
    windows.forEach((window, i) => {
      const until = windows[i + 1]?.startMs ?? Number.POSITIVE_INFINITY;
      const inPhase = failed.filter((at) => at >= window.startMs && at < until);
      const seconds = new Set(inPhase.map((at) => Math.floor(at / 1000))).size;
      const last = inPhase[inPhase.length - 1];
      const recovery = last === undefined ? 0 : (last - window.startMs) / 1000;
      const check = this.checkpoints.find((c) => c.window === window);
      lines.push(
        `  ${window.fault.label.padEnd(36)} ${`${seconds} s`.padStart(9)} ${`${recovery.toFixed(1)} s`.padStart(9)} ${String(check?.accepted ?? '-').padStart(6)} ${String(check?.missing.length ?? '-').padStart(5)}  ${check ? `exit ${check.verifyExit ?? '-'}: ${check.verifyTail}` : 'not run'}`,
      );
      if (!check) failures.push(`no checkpoint ran after "${window.fault.label}"`);
      else {
        if (check.missing.length > 0) {
          failures.push(
            `${check.missing.length} accepted payments missing after "${window.fault.label}": ${check.missing.slice(0, 5).join(', ')}`,
          );
        }
        if (check.verifyExit !== 0)
          failures.push(`verify after "${window.fault.label}" exited ${check.verifyExit ?? '-'}`);
      }
    });
    const final = this.final;
    if (final) {
      lines.push(
        `  every 202 of the run, after the load: ${final.accepted - final.missing.length} of ${final.accepted} found`,
      );
      if (final.missing.length > 0) {
        failures.push(
          `${final.missing.length} accepted payments missing at the end: ${final.missing.slice(0, 5).join(', ')}`,
        );
      }
    }
    return { lines, failures };
  }
}
