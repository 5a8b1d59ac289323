import { createReadStream, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

export interface RequestSample {
  /** When k6 recorded the request (its end), epoch milliseconds. */
  atMs: number;
  durationMs: number;
  /** 0: no answer (network error, timeout). */
  status: number;
  errorCode: string;
  /** The request's name tag ("POST /payments", "GET /payments/{id}"). */
  name: string;
}

/** The http_req_duration samples of a k6 CSV output (`--out csv=`, unix_milli times). */
export async function readRequestSamples(csvPath: string): Promise<RequestSample[]> {
  const samples: RequestSample[] = [];
  let columns: string[] | null = null;
  const lines = createInterface({ input: createReadStream(csvPath), crlfDelay: Infinity });
  for await (const line of lines) {
    if (columns === null) {
      columns = splitCsvLine(line);
      continue;
    }
    if (!line.startsWith('http_req_duration,')) continue;
    const fields = splitCsvLine(line);
    const field = (name: string) => fields[columns?.indexOf(name) ?? -1] ?? '';
    samples.push({
      atMs: Number(field('timestamp')),
      durationMs: Number(field('metric_value')),
      status: Number(field('status') || '0'),
      errorCode: field('error_code'),
      name: field('name'),
    });
  }
  return samples;
}

/** One CSV line (RFC 4180 quoting, as Go's encoding/csv writes it). */
function splitCsvLine(line: string): string[] {
  const fields: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const char = line.charAt(i);
    if (quoted) {
      if (char === '"' && line.charAt(i + 1) === '"') {
        current += '"';
        i++;
      } else if (char === '"') quoted = false;
      else current += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      fields.push(current);
      current = '';
    } else current += char;
  }
  fields.push(current);
  return fields;
}

/** What a k6 summary export says about the run's client-side invariants. */
export interface K6Summary {
  /** Counters of broken invariants and retries (storm_*, unresolved_requests, ...). */
  counters: Record<string, number>;
  /** Failed checks by name (mix). */
  failedChecks: Record<string, number>;
}

interface SummaryExport {
  metrics?: Record<string, { count?: number }>;
  root_group?: { checks?: Record<string, { name: string; fails: number }> };
}

/**
 * `storm` runs far more iterations than it has time for, so its dropped_iterations says nothing;
 * for the constant-rate `mix` it counts arrivals k6 had no free virtual user for.
 */
export function readK6Summary(summaryPath: string, script: string): K6Summary | null {
  let parsed: SummaryExport;
  try {
    parsed = JSON.parse(readFileSync(summaryPath, 'utf8')) as SummaryExport;
  } catch {
    return null;
  }
  const counters: Record<string, number> = {};
  for (const [name, metric] of Object.entries(parsed.metrics ?? {})) {
    if (name === 'dropped_iterations' && script !== 'mix') continue;
    if (
      /^(storm_|refund_|unresolved_requests$|server_errors$|retries$|dropped_iterations$)/.test(
        name,
      )
    ) {
      counters[name] = metric.count ?? 0;
    }
  }
  const failedChecks: Record<string, number> = {};
  for (const check of Object.values(parsed.root_group?.checks ?? {})) {
    failedChecks[check.name] = check.fails;
  }
  return { counters, failedChecks };
}
