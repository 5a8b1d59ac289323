export interface TimelineEvent {
  /** Milliseconds since the timeline started. */
  atMs: number;
  text: string;
}

/** The run's events, printed as they happen ("t+12.3s ...") and kept for the report. */
export class Timeline {
  readonly startedAt = Date.now();
  readonly events: TimelineEvent[] = [];

  note(text: string): void {
    const atMs = Date.now() - this.startedAt;
    this.events.push({ atMs, text });
    process.stdout.write(`${formatOffset(atMs)}  ${text}\n`);
  }

  /** Milliseconds since the start. */
  now(): number {
    return Date.now() - this.startedAt;
  }
}

export function formatOffset(ms: number): string {
  return `t+${(ms / 1000).toFixed(1).padStart(6)}s`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
