import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

/** Linux reports process times in clock ticks of 1/100 s (USER_HZ) on every common platform. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process has used so far; 0 when it is gone. */
async function cpuSecondsOf(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** The pids whose command name (/proc/<pid>/comm) is `name`. */
async function pidsNamed(name: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const comm = await readFile(`/proc/${entry}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === name) pids.push(Number(entry));
  }
  return pids;
}

/** `root` and every process below it (a postmaster's backends), by /proc's parent pids. */
async function processTree(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (stat !== '') parents.set(Number(entry), ppid);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  }
  return tree;
}

/**
 * Who is measured: pids directly, a process and its descendants (one stack's Postgres, when
 * other stacks run on the machine), or every process with a command name.
 */
export type CpuSubjects = Record<
  string,
  { pids: readonly number[] } | { tree: number } | { command: string }
>;

async function subjectPids(
  subject: { pids: readonly number[] } | { tree: number } | { command: string },
): Promise<readonly number[]> {
  if ('pids' in subject) return subject.pids;
  if ('tree' in subject) return processTree(subject.tree);
  return pidsNamed(subject.command);
}

/**
 * Samples the CPU time of each subject; the returned function samples again and resolves with
 * each subject's CPU seconds in between. A process that starts in between counts in full; one
 * that exits in between is missed (Postgres backends live as long as their pooled connection).
 */
export async function startCpuWindow(
  subjects: CpuSubjects,
): Promise<() => Promise<Record<string, number>>> {
  const resolve = async () =>
    Object.fromEntries(
      await Promise.all(
        Object.entries(subjects).map(async ([name, subject]) => {
          const pids = await subjectPids(subject);
          const times = await Promise.all(pids.map(async (pid) => [pid, await cpuSecondsOf(pid)]));
          return [name, new Map(times as [number, number][])] as const;
        }),
      ),
    );
  const before = await resolve();
  return async () => {
    const after = await resolve();
    const used: Record<string, number> = {};
    for (const [name, times] of Object.entries(after)) {
      let total = 0;
      for (const [pid, seconds] of times) {
        // A process first seen at the end started within the window: all its time counts.
        total += seconds - (before[name]?.get(pid) ?? 0);
      }
      // To the clock tick (10 ms).
      used[name] = Math.round(total * 100) / 100;
    }
    return used;
  };
}

/**
 * The bench stack's `service` (scripts/stack.sh pid, which follows STACK_DIR) and what runs
 * below it; every `command` on the machine when the stack cannot name it. Other stacks on the
 * machine (the shared one, other benches) are then not counted as this run's.
 */
export async function stackSubject(
  root: string,
  service: 'postgres' | 'kafka' | 'redis',
  command: string,
): Promise<{ tree: number } | { command: string }> {
  const pid = await new Promise<number>((resolve) => {
    execFile('bash', [`${root}/scripts/stack.sh`, 'pid', service], (error, stdout) => {
      resolve(error ? Number.NaN : Number(stdout.trim().split('\n')[0]));
    });
  });
  return Number.isInteger(pid) && pid > 0 ? { tree: pid } : { command };
}
