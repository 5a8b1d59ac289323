import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The commands of a README's ```sh blocks, run as a reader runs them: one at a time, in one
 * shell session (what one step exports, the next sees). A step whose comment says
 * `# runs until Ctrl-C` is a long-running program: it is started, not awaited.
 */
export interface ShellStep {
  /** The command as written (continuation lines joined), its comment included. */
  command: string;
  untilCtrlC: boolean;
}

export const UNTIL_CTRL_C = '# runs until Ctrl-C';

export function readShellSteps(markdown: string): ShellStep[] {
  const steps: ShellStep[] = [];
  for (const block of markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const lines = (block[1] ?? '').replace(/\\\n\s*/g, ' ').split('\n');
    for (const line of lines.map((text) => text.trim())) {
      if (line === '' || line.startsWith('#')) continue;
      steps.push({ command: line, untilCtrlC: line.endsWith(UNTIL_CTRL_C) });
    }
  }
  return steps;
}

export interface StepResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` with bash in `cwd` with `env`, bounded by `timeoutMs` (then killed, code null).
 * Returns its output and the environment it left (its exports), for the next step.
 */
export async function runShellStep(
  command: string,
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<StepResult & { env: NodeJS.ProcessEnv }> {
  const envFile = path.join(tmpdir(), `readme-step-${String(process.pid)}-${String(Date.now())}`);
  const script = `${command}\nenv -0 > ${JSON.stringify(envFile)}`;
  const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
  });
  const result = await settle(child, options.timeoutMs);
  let env: NodeJS.ProcessEnv = options.env;
  if (result.code === 0) {
    env = Object.fromEntries(
      readFileSync(envFile, 'utf8')
        .split('\0')
        .filter((entry) => entry.includes('='))
        .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    );
  }
  rmSync(envFile, { force: true });
  return { ...result, env };
}

export interface BackgroundStep {
  output: () => StepResult;
  /** Ctrl-C: SIGINT to the step's process group; resolves when it exited (or `timeoutMs`: killed). */
  interrupt: (timeoutMs: number) => Promise<StepResult>;
  /** Kills it if it still runs (cleanup). */
  kill: () => void;
}

/** Starts a `# runs until Ctrl-C` step in its own process group. */
export function startShellStep(
  command: string,
  options: { cwd: string; env: NodeJS.ProcessEnv },
): BackgroundStep {
  const child = spawn('bash', ['-c', command], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  let running = true;
  void exited.then(() => (running = false));
  const signalGroup = (signal: NodeJS.Signals) => {
    if (running) killGroup(child.pid, signal);
  };
  return {
    output: () => ({ code: child.exitCode, stdout, stderr }),
    interrupt: async (timeoutMs) => {
      signalGroup('SIGINT');
      const timer = setTimeout(() => {
        signalGroup('SIGKILL');
      }, timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return { code, stdout, stderr };
    },
    kill: () => {
      signalGroup('SIGKILL');
    },
  };
}

function settle(child: ReturnType<typeof spawn>, timeoutMs: number): Promise<StepResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      killGroup(child.pid, 'SIGKILL');
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Signals a process group; one already gone is no error. */
function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group exited meanwhile.
  }
}
