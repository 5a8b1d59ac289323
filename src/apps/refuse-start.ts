import type { Logger } from '../platform/telemetry/logger.js';

/**
 * How a role stops when what it would run on is unfit (topics production must not use, DESIGN
 * 122): one fatal line saying why, then exit 1, as for a bad setting. Not an outage to ride out.
 */
export function refuseStart(logger: Logger): (line: string) => void {
  return (line) => {
    logger.fatal(line);
    process.exit(1);
  };
}
