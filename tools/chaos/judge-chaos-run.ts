import type { ChaosOptions } from './chaos-options.js';
import type { ChaosReport } from './chaos-report.js';
import { loadFailures } from './load-results.js';

/** The reasons a run fails: verify always; client invariants and bounds with --strict. */
export function judgeChaosRun(report: ChaosReport, options: ChaosOptions): string[] {
  const failures: string[] = [];
  if (report.verify.exitCode !== 0) {
    failures.push(
      report.verify.exitCode === 1
        ? 'verify found violations'
        : `verify could not verify (exit ${report.verify.exitCode ?? 'by a signal'})`,
    );
  }
  failures.push(...loadFailures(report.load, options.strict));
  if (options.strict) {
    for (const window of report.windows) {
      if (window.boundMet === false) failures.push(`${window.label}: missed ${window.bound ?? ''}`);
    }
  }
  return failures;
}
