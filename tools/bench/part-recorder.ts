import { writeFile } from 'node:fs/promises';
import { loadAverage } from './machine-conditions.js';
import type { PartRecord } from './part-reports.js';

export interface PartRecorder {
  /** Every part so far, in order. */
  parts: PartRecord[];
  /** What the partial report holds: the parts and each part's figures by name. */
  measured: Record<string, unknown>;
  /** Writes the partial report now. */
  save: () => Promise<void>;
  /**
   * Runs a part: its start, wall time and load average at both ends are recorded, its result
   * kept under `figures`, and the partial report written when it ends, failed or not. Resolves
   * with the result, or undefined when the part failed (its error is recorded; the bench goes on).
   */
  part: <T>(name: string, work: () => Promise<T>, figures?: string) => Promise<T | undefined>;
}

/**
 * Each part's figures, wall time and load go to `<base>.partial.json` as soon as the part ends
 * (issue 29: the bench never loses a run): a part that fails leaves the others' figures.
 */
export function createPartRecorder(
  base: string,
  started: Date,
  say: (line: string) => void,
): PartRecorder {
  const parts: PartRecord[] = [];
  const measured: Record<string, unknown> = { date: started.toISOString(), complete: false, parts };
  const save = () => writeFile(`${base}.partial.json`, JSON.stringify(measured, null, 2));
  const part = async <T>(name: string, work: () => Promise<T>, figures?: string) => {
    const record: PartRecord = {
      part: name,
      startedAt: new Date().toISOString(),
      wallSeconds: 0,
      loadAverageStart: loadAverage(),
      loadAverageEnd: [],
    };
    const t0 = performance.now();
    say(`${name} (load average ${record.loadAverageStart.join(' ')})`);
    try {
      const result = await work();
      if (figures) measured[figures] = result;
      return result;
    } catch (error) {
      record.error = error instanceof Error ? error.message : String(error);
      say(`${name} failed: ${record.error}`);
      return undefined;
    } finally {
      record.wallSeconds = Math.round((performance.now() - t0) / 100) / 10;
      record.loadAverageEnd = loadAverage();
      parts.push(record);
      await save();
    }
  };
  return { parts, measured, save, part };
}
