import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROLE_URL_VARIABLES } from '../support/role-database-url.js';
import { runChecked, runCommand } from './run-command.js';

export type StackService = 'postgres' | 'redis' | 'kafka' | 'kafka3';

export interface StackEndpoints {
  /** The owner's login: it creates the run's database and migrates it. */
  DATABASE_URL: string;
  REDIS_URL: string;
  KAFKA_BROKERS: string;
  /** API_DATABASE_URL, RELAY_DATABASE_URL, SETTLEMENT_DATABASE_URL: the roles' own logins. */
  roleLogins: Record<string, string>;
  /**
   * The HA topology's other settings (TLS CA files, SASL, Sentinels, replication...): every line
   * `env` printed, for every process of the run. Empty on the single-node stack.
   */
  extraEnv: Record<string, string>;
}

/** `single`: scripts/stack.sh as it is; `ha`: the same commands with STACK_TOPOLOGY=ha. */
export type StackTopology = 'single' | 'ha';

/**
 * stack.sh start waits for the service to answer, 120 s by default; a restarted Kafka broker on
 * a busy 2-core machine (load average 30) took longer, and a run that gives up there proves
 * nothing. Overridable with STACK_WAIT_SECS as for stack.sh itself.
 */
const STACK_WAIT_SECS = process.env.STACK_WAIT_SECS ?? '300';
const START_TIMEOUT_MS = (Number(STACK_WAIT_SECS) + 60) * 1000;

/**
 * The backing services, driven through `scripts/stack.sh` (so STACK_DIR and its port variables
 * choose the stack) and by signals to the pids it reports. Every process it freezes is
 * remembered until thawed: `thawAllNow` (synchronous, safe in an exit handler) resumes them
 * whatever happened, so a chaos run never leaves a stopped Redis, Postgres or Kafka behind.
 */
export class StackControl {
  private readonly frozen = new Set<number>();
  private readonly script: string;
  /** Set by the cleanup: from then on nothing more is frozen or stopped. */
  private closed = false;

  constructor(
    private readonly root: string,
    readonly topology: StackTopology = 'single',
  ) {
    this.script = path.join(root, 'scripts', 'stack.sh');
  }

  async endpoints(kafka3: boolean): Promise<StackEndpoints> {
    const out = await this.stack(['env', ...(kafka3 ? ['kafka3'] : [])], 30_000);
    const found: Record<string, string> = {};
    for (const match of out.matchAll(/^export (\w+)=(.*)$/gm)) {
      if (match[1] !== undefined && match[2] !== undefined) found[match[1]] = unquote(match[2]);
    }
    const { DATABASE_URL, REDIS_URL, KAFKA_BROKERS } = found;
    if (!DATABASE_URL || !REDIS_URL || !KAFKA_BROKERS) {
      throw new Error(`scripts/stack.sh env printed no endpoints:\n${out}`);
    }
    const roleLogins = Object.fromEntries(
      Object.values(ROLE_URL_VARIABLES)
        .map((name) => [name, found[name]])
        .filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    const extraEnv = this.topology === 'ha' ? found : {};
    return { DATABASE_URL, REDIS_URL, KAFKA_BROKERS, roleLogins, extraEnv };
  }

  /** Exits non-zero (an Error) unless every service answers. */
  async checkRunning(services: readonly StackService[]): Promise<void> {
    const result = await runCommand('bash', [this.script, 'status', ...services], {
      cwd: this.root,
      env: this.env(),
      timeoutMs: 60_000,
    });
    if (result.code !== 0) {
      throw new Error(
        `the stack is not running (start it: ${this.topology === 'ha' ? 'STACK_TOPOLOGY=ha ' : ''}scripts/stack.sh start ${services.join(' ')}):\n${result.stdout}`,
      );
    }
  }

  async start(service: StackService): Promise<void> {
    await this.stack(['start', service], START_TIMEOUT_MS);
  }

  async stop(service: StackService): Promise<void> {
    if (this.closed) throw new Error('chaos is stopping: no more faults');
    await this.stack(['stop', service], 120_000);
  }

  /** Main pid of a service; for kafka3 one entry per node (null: that node is down). */
  async pids(service: StackService): Promise<(number | null)[]> {
    const result = await runCommand('bash', [this.script, 'pid', service], {
      cwd: this.root,
      env: this.env(),
      timeoutMs: 30_000,
    });
    return result.stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => (/^\d+$/.test(line.trim()) ? Number(line.trim()) : null));
  }

  /**
   * SIGSTOPs `pid` and, for Postgres, every process it started (backends answer queries on
   * their own, so stopping the postmaster alone would freeze nothing). Returns the pids.
   */
  freeze(pid: number, withChildren: boolean): number[] {
    if (this.closed) throw new Error('chaos is stopping: no more faults');
    // The parent first, so it starts no new child between the scan and the signals.
    const pids = [pid];
    this.signal(pid, 'SIGSTOP');
    if (withChildren) {
      for (const child of descendantsOf(pid)) {
        this.signal(child, 'SIGSTOP');
        pids.push(child);
      }
    }
    return pids;
  }

  thaw(pids: readonly number[]): void {
    for (const pid of [...pids].reverse()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Gone already: nothing left to resume.
      }
      this.frozen.delete(pid);
    }
  }

  /** Thaws everything and freezes nothing more (the run is ending). */
  thawAllNow(): void {
    this.closed = true;
    this.thaw([...this.frozen]);
  }

  kill(pid: number): void {
    process.kill(pid, 'SIGKILL');
  }

  private signal(pid: number, signal: 'SIGSTOP'): void {
    this.frozen.add(pid);
    process.kill(pid, signal);
  }

  /**
   * The HA topology's pid of `what` (`kafka-node 2`, `kafka-controller`, `redis-primary`,
   * `postgres-primary`, ...: scripts/ha/stack-ha.sh); an Error when nothing runs there.
   */
  async haPid(...what: string[]): Promise<number> {
    const out = await this.stack(['pid', ...what], 90_000);
    const pid = Number(out.trim().split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid for ${what.join(' ')}: ${out}`);
    return pid;
  }

  /** The HA topology's promote step: the Postgres standby becomes the primary behind haproxy. */
  async promotePostgres(): Promise<void> {
    if (this.closed) throw new Error('chaos is stopping: no more faults');
    await this.stack(['promote', 'postgres'], 120_000);
  }

  private env(): NodeJS.ProcessEnv {
    return { ...process.env, STACK_WAIT_SECS, STACK_TOPOLOGY: this.topology };
  }

  private stack(args: readonly string[], timeoutMs: number): Promise<string> {
    return runChecked('bash', [this.script, ...args], {
      cwd: this.root,
      env: this.env(),
      timeoutMs,
    });
  }
}

/** A value as the shell reads it: `'a&b'` (and `'\''` inside) or a bare word. */
export function unquote(value: string): string {
  if (!value.startsWith("'")) return value;
  return value.slice(1, -1).replaceAll("'\\''", "'");
}

/** Every live process below `pid`, from /proc (Linux). */
function descendantsOf(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // Exited while we read: not a descendant any more.
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [child, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}
