import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLoadCli } from '../support/load-cli.js';
import { REPO_ROOT } from '../support/services.js';

/**
 * `npm run k6` runs the scenarios under the user's own k6 (the project never installs one): with
 * none on PATH it says where to get one and exits 2; with one, it runs k6/<scenario>.js with the
 * run's settings. A stand-in `k6` (a shell script recording its arguments and environment) takes
 * the place of the user's, so no k6 runs here.
 */
describe('npm run load -- --engine k6 (what npm run k6 runs)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'k6-engine-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(path.join(REPO_ROOT, 'reports', 'k6-engine-test'), { recursive: true, force: true });
  });

  it('when no k6 is on PATH, then it says how to get one and that the driver runs the same scenario, and exits 2 without running anything', async () => {
    const run = await runLoadCli(
      ['storm', '--engine', 'k6'],
      { PATH: '/usr/bin:/bin', API_KEYS: 'sk_x' },
      30_000,
    );
    expect(run.code).toBe(2);
    expect(run.output).toContain('k6 is not on PATH');
    expect(run.output).toContain('npm run load -- <scenario>');
  });

  it("when the user's k6 is on PATH, then it runs k6/<scenario>.js with the run's settings and k6's exit 99 (thresholds crossed) is exit 1", async () => {
    const record = path.join(dir, 'k6-call.txt');
    const fake = path.join(dir, 'k6');
    await writeFile(
      fake,
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\necho "RUN_ID=$RUN_ID KEYS=$KEYS" >> '${record}'\nexit 99\n`,
    );
    await chmod(fake, 0o755);
    const run = await runLoadCli(
      ['storm', '--engine', 'k6', '--summary', path.join(dir, 's.json'), '--', '--quiet'],
      { PATH: `${dir}:/usr/bin:/bin`, API_KEYS: 'sk_x', RUN_ID: 'k6-engine-test', KEYS: '7' },
      30_000,
    );
    expect(run.code, run.output).toBe(1);
    const call = await readFile(record, 'utf8');
    expect(call).toMatch(/^run\n--no-usage-report\n/);
    expect(call).toContain('--quiet\n');
    expect(call).toMatch(/k6\/storm\.js\n/);
    expect(call).toContain('RUN_ID=k6-engine-test KEYS=7');
  });
});
