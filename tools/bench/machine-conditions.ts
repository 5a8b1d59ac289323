import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The 1/5/15-minute load averages, two decimals. */
export function loadAverage(): number[] {
  return os.loadavg().map((value) => Math.round(value * 100) / 100);
}

/** What else is using the machine: the load average and the busiest other processes. */
export async function machineConditions(): Promise<{ loadAverage: number[]; busiest: string[] }> {
  const { stdout } = await run(
    'ps',
    ['-eo', 'pid,ppid,pcpu,rss,args', '--sort=-pcpu', '--no-headers'],
    { timeout: 10_000, maxBuffer: 16 << 20 },
  );
  const mine = new Set([process.pid, process.ppid]);
  const others = stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([pid, ppid]) => pid && !mine.has(Number(pid)) && Number(ppid) !== process.pid);
  return {
    loadAverage: loadAverage(),
    // %CPU over each process's lifetime, RSS, command line (cut short).
    busiest: others
      .slice(0, 5)
      .map(([, , cpu, rss, ...args]) => `${cpu}% ${rss} KiB ${args.join(' ').slice(0, 80)}`),
  };
}
