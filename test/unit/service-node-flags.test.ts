import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVICE_NODE_FLAGS } from '../../src/platform/lifecycle/service-node-flags.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The files that start services on a command line of their own (they cannot import the constant). */
const LAUNCHERS = [
  'package.json',
  'scripts/up.sh',
  'scripts/docker-entrypoint.sh',
  'tools/fuzz/run.sh',
];

/**
 * Every command line of `text` that runs a service entry point: from its `node` to the entry. An
 * entry named with no `node` in the 200 characters before it is prose (a comment), not a command.
 */
function serviceCommands(text: string): string[] {
  const commands: string[] = [];
  for (const entry of text.matchAll(/dist\/apps\/[a-z]+\/main\.js/g)) {
    const end = entry.index + entry[0].length;
    const window = text.slice(Math.max(0, end - 200), end);
    const start = [...window.matchAll(/(^|[\s'"[])(node)(?=['"\s,])/g)].at(-1);
    if (start === undefined) continue;
    commands.push(window.slice(start.index + (start[1]?.length ?? 0)));
  }
  return commands;
}

describe('service Node flags', () => {
  it.each(LAUNCHERS)(
    'when %s starts a service, then the command line carries every SERVICE_NODE_FLAGS flag',
    (file) => {
      const commands = serviceCommands(readFileSync(path.join(ROOT, file), 'utf8'));
      expect(commands.length).toBeGreaterThan(0);
      for (const command of commands) {
        for (const flag of SERVICE_NODE_FLAGS) expect(command).toContain(flag);
      }
    },
  );

  it('when a command line lacks a flag, then the check finds the command and fails', () => {
    const [command] = serviceCommands('run: node --import x.js dist/apps/api/main.js\n');
    expect(command).toBe('node --import x.js dist/apps/api/main.js');
    expect(command).not.toContain(SERVICE_NODE_FLAGS[0]);
  });
});
