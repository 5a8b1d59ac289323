import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../src/platform/lifecycle/service-node-flags.js';
import { ENTRY_POINTS } from './repo-root.js';

/** The acquirer simulator runs as a process of its own too (one): it is not the service. */
export type Role = 'api' | 'relay' | 'settlement' | 'webhooks' | 'acquirer';
/** The service's roles, `--processes` of each. */
export const ROLES: readonly Role[] = ['api', 'relay', 'settlement', 'webhooks'];

/** A role process that has not logged "ready" by then will not. */
const READY_TIMEOUT_MS = 60_000;
/** SIGTERM grace at the end of a run, then SIGKILL (above the service's 15 s shutdown bound). */
const STOP_GRACE_MS = 20_000;

export interface LogCounts {
  warn: number;
  error: number;
  fatal: number;
}

interface Instance {
  name: string;
  role: Role;
  env: NodeJS.ProcessEnv;
  log: WriteStream;
  child: ChildProcess | null;
  counts: LogCounts;
  starts: number;
}

/**
 * The chaos run's role processes: each with its own ports and log file (JSON lines from every
 * start, appended), killed and restarted on demand, all stopped at the end.
 */
export class RoleFleet {
  private readonly instances = new Map<string, Instance>();
  /** Set by stopAll: a fault still running must not start a process again. */
  private closed = false;
  /** SIGSTOPped by `pause` and not resumed yet. */
  private readonly paused = new Set<ChildProcess>();

  constructor(
    private readonly root: string,
    private readonly logDir: string,
  ) {}

  /** Registers a process (not started) under `<role>-<index>`. */
  add(role: Role, index: number, env: NodeJS.ProcessEnv): string {
    const name = `${role}-${index}`;
    this.instances.set(name, {
      name,
      role,
      env,
      log: createWriteStream(path.join(this.logDir, `${name}.log`), { flags: 'a' }),
      child: null,
      counts: { warn: 0, error: 0, fatal: 0 },
      starts: 0,
    });
    return name;
  }

  names(role?: Role): string[] {
    return [...this.instances.values()]
      .filter((instance) => role === undefined || instance.role === role)
      .map((instance) => instance.name);
  }

  /**
   * Starts the process and resolves once it logged `readyMessage` ("ready": every role started;
   * a role's own line, e.g. "relay ready", once it works); returns how long that took.
   */
  start(name: string, readyMessage = 'ready'): Promise<number> {
    if (this.closed) return Promise.reject(new Error(`chaos is stopping: ${name} not started`));
    const instance = this.get(name);
    const startedAt = Date.now();
    const child = spawn(
      process.execPath,
      [...SERVICE_NODE_FLAGS, path.join(this.root, ENTRY_POINTS.role(instance.role))],
      {
        cwd: this.root,
        env: instance.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    instance.child = child;
    instance.starts += 1;
    return new Promise((resolve, reject) => {
      let pending = '';
      let ready = false;
      const timer = setTimeout(() => {
        if (!ready) {
          reject(new Error(`${name} did not log "${readyMessage}" within ${READY_TIMEOUT_MS} ms`));
        }
      }, READY_TIMEOUT_MS);
      child.stdout.on('data', (chunk: Buffer) => {
        instance.log.write(chunk);
        pending += chunk.toString();
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          const level = levelOf(line);
          if (level >= 60) instance.counts.fatal += 1;
          else if (level >= 50) instance.counts.error += 1;
          else if (level >= 40) instance.counts.warn += 1;
          if (!ready && line.includes(`"msg":"${readyMessage}"`)) {
            ready = true;
            clearTimeout(timer);
            resolve(Date.now() - startedAt);
          }
        }
      });
      child.stderr.on('data', (chunk: Buffer) => instance.log.write(chunk));
      child.on('exit', (code, signal) => {
        if (instance.child === child) instance.child = null;
        if (!ready) {
          clearTimeout(timer);
          reject(
            new Error(
              `${name} exited (${signal ?? code}) before "${readyMessage}"; see ${name}.log`,
            ),
          );
        }
      });
    });
  }

  pid(name: string): number | null {
    return this.get(name).child?.pid ?? null;
  }

  /**
   * SIGSTOP: the process stays, its sockets open, and does nothing until `resume` (its leases
   * run out meanwhile). Returns its pid. Remembered until resumed: stopping the fleet resumes it.
   */
  pause(name: string): number {
    if (this.closed) throw new Error(`chaos is stopping: ${name} not paused`);
    const child = this.get(name).child;
    if (!child?.pid || child.exitCode !== null) throw new Error(`${name} is not running`);
    child.kill('SIGSTOP');
    this.paused.add(child);
    return child.pid;
  }

  /** SIGCONT to a paused process (nothing if it is gone). */
  resume(name: string): void {
    const child = this.get(name).child;
    if (child) this.resumeChild(child);
  }

  /** The environment a process is started with (its ports: PORT, METRICS_PORT). */
  env(name: string): NodeJS.ProcessEnv {
    return this.get(name).env;
  }

  /**
   * SIGTERM, then SIGKILL if it is still alive after `graceMs`: resolves with how it exited
   * (code 0: a graceful shutdown within the bound) and how long that took.
   */
  async terminate(
    name: string,
    graceMs: number,
  ): Promise<{ code: number | null; signal: string | null; ms: number }> {
    const child = this.get(name).child;
    const startedAt = Date.now();
    if (child?.exitCode !== null || child.signalCode !== null) {
      return { code: child?.exitCode ?? null, signal: child?.signalCode ?? null, ms: 0 };
    }
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    await this.signalAndWait(this.get(name), 'SIGTERM', graceMs);
    await this.signalAndWait(this.get(name), 'SIGKILL', 5_000);
    await exited;
    return { code: child.exitCode, signal: child.signalCode, ms: Date.now() - startedAt };
  }

  /** SIGKILL, resolved once the process is gone. */
  async kill(name: string): Promise<void> {
    await this.signalAndWait(this.get(name), 'SIGKILL', 10_000);
  }

  /** SIGTERM to every process, SIGKILL to those still alive after the grace period. */
  async stopAll(): Promise<void> {
    this.closed = true;
    // A stopped process would not act on SIGTERM before the grace period is over.
    for (const child of [...this.paused]) this.resumeChild(child);
    const live = [...this.instances.values()];
    await Promise.all(
      live.map((instance) => this.signalAndWait(instance, 'SIGTERM', STOP_GRACE_MS)),
    );
    await Promise.all(live.map((instance) => this.signalAndWait(instance, 'SIGKILL', 5_000)));
    await Promise.all(
      live.map(
        (instance) =>
          new Promise<void>((resolve) => {
            instance.log.end(() => {
              resolve();
            });
          }),
      ),
    );
  }

  /** Synchronous last resort (exit handler): SIGKILL whatever still runs. */
  killAllNow(): void {
    this.closed = true;
    for (const child of [...this.paused]) this.resumeChild(child);
    for (const instance of this.instances.values()) {
      if (instance.child?.exitCode === null) instance.child.kill('SIGKILL');
    }
  }

  logCounts(): { name: string; starts: number; counts: LogCounts }[] {
    return [...this.instances.values()].map(({ name, starts, counts }) => ({
      name,
      starts,
      counts,
    }));
  }

  private resumeChild(child: ChildProcess): void {
    this.paused.delete(child);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGCONT');
  }

  private signalAndWait(instance: Instance, signal: NodeJS.Signals, waitMs: number): Promise<void> {
    const child = instance.child;
    if (child?.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });
  }

  private get(name: string): Instance {
    const instance = this.instances.get(name);
    if (!instance) throw new Error(`no role process named ${name}`);
    return instance;
  }
}

/** pino's numeric level of a JSON log line, 0 for anything else. */
function levelOf(line: string): number {
  const match = /"level":(\d+)/.exec(line);
  return match?.[1] === undefined ? 0 : Number(match[1]);
}
