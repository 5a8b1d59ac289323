import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { RequestSample } from './http-transport.js';

/**
 * A run's request samples, one JSON array a line: [end epoch ms, duration ms, status, error,
 * name]. Compact enough for every request of a chaos run; read back by `readRequestSamples`.
 */
export function requestSampleWriter(file: string): {
  write: (sample: RequestSample) => void;
  close: () => Promise<void>;
} {
  const out = createWriteStream(file);
  return {
    write: (s) => {
      out.write(
        `${JSON.stringify([s.atMs, Math.round(s.durationMs * 100) / 100, s.status, s.error, s.name])}\n`,
      );
    },
    close: () =>
      new Promise((resolve, reject) => {
        out.once('error', reject);
        out.end(() => {
          resolve();
        });
      }),
  };
}

/** The samples a run wrote (`requestSampleWriter`); a torn last line is skipped. */
export async function readRequestSamples(file: string): Promise<RequestSample[]> {
  const samples: RequestSample[] = [];
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    let fields: unknown;
    try {
      fields = JSON.parse(line);
    } catch {
      continue;
    }
    if (!Array.isArray(fields) || fields.length !== 5) continue;
    const [atMs, durationMs, status, error, name] = fields as [
      number,
      number,
      number,
      string,
      string,
    ];
    samples.push({ atMs, durationMs, status, error, name });
  }
  return samples;
}
