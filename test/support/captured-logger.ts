import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A pino logger (level debug) whose JSON lines land in `lines`, for assertions on what is logged. */
export function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}
