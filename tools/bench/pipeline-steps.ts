import { highestRateHolding, tookTheRate, type StepVerdictInput } from './backlog.js';
import type { PipelineResult, SweepStep } from './measure-pipeline.js';

/** A step of the pipeline runs with what it was: a fixed-rate run (1-based) or a sweep step. */
export interface LabelledStep {
  label: string;
  step: SweepStep;
}

/** Every step of the runs: each fixed-rate run, then the sweep steps (which the first run made). */
export function pipelineSteps(runs: readonly PipelineResult[]): LabelledStep[] {
  const fixed = runs.map((run, i) => ({
    label: `fixed-rate run ${i + 1}`,
    step: { rate: run.settleRate, api: run.api, settle: run.settle, backlog: run.backlog },
  }));
  const sweep = runs.flatMap((run) => run.sweep.map((step) => ({ label: 'sweep', step })));
  return [...fixed, ...sweep];
}

function verdictInputs(runs: readonly PipelineResult[]): StepVerdictInput[] {
  return pipelineSteps(runs).map(({ step }) => ({
    rate: step.rate,
    achieved: step.api.perSecond,
    settleP99: step.settle.p99,
    unsettled: step.settle.unsettled,
    backlog: step.backlog,
  }));
}

/** A step kept up: the API took the rate, the backlog stayed flat, everything settled. */
export function keptUp(step: StepVerdictInput): boolean {
  return tookTheRate(step) && step.backlog.verdict === 'flat' && step.unsettled === 0;
}

/** The step took the rate and settled everything with p99 within `p99Ms`. */
export function settledWithin(step: StepVerdictInput, p99Ms: number): boolean {
  return tookTheRate(step) && step.unsettled === 0 && step.settleP99 <= p99Ms;
}

/** The highest rate kept up with, every slower step too (undefined: the slowest did not). */
export function keepUpRate(runs: readonly PipelineResult[]): number | undefined {
  return highestRateHolding(verdictInputs(runs), keptUp);
}

/** The highest rate whose step (and every slower one) settled within `p99Ms`. */
export function settledWithinRate(
  runs: readonly PipelineResult[],
  p99Ms: number,
): number | undefined {
  return highestRateHolding(verdictInputs(runs), (s) => settledWithin(s, p99Ms));
}

/** The fastest rate any step offered. */
export function highestRateOffered(runs: readonly PipelineResult[]): number {
  return Math.max(0, ...pipelineSteps(runs).map(({ step }) => step.rate));
}

/** A fixed-rate run as the verdicts read it. */
export function runVerdictInput(run: PipelineResult): StepVerdictInput {
  return {
    rate: run.settleRate,
    achieved: run.api.perSecond,
    settleP99: run.settle.p99,
    unsettled: run.settle.unsettled,
    backlog: run.backlog,
  };
}
