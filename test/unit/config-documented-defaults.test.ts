import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from '../../src/platform/config/config.js';
import { readConfigBlock } from '../../tools/docs/config-table.js';

// docs/configuration.md must print every default in the exact form the parser accepts: each
// documented default, set as the variable's value, parses to what the variable gets when unset.

const CONFIG_DOC = path.resolve(import.meta.dirname, '../../docs/configuration.md');

/** Variable -> its documented default as a value to set; undefined where the page says `unset`. */
async function documentedDefaults(): Promise<Map<string, string | undefined>> {
  const table = readConfigBlock(await readFile(CONFIG_DOC, 'utf8'));
  const defaults = new Map<string, string | undefined>();
  for (const line of table.split('\n').slice(2)) {
    // Cells are split at the pipes the generator did not escape.
    const [, variableCell = '', defaultCell = ''] = line.split(/(?<!\\)\|/).map((c) => c.trim());
    const variable = /^`([A-Z0-9_]+)`$/.exec(variableCell)?.[1];
    if (variable === undefined) throw new Error(`not a table row: ${line}`);
    if (defaultCell === 'unset') {
      defaults.set(variable, undefined);
      continue;
    }
    if (defaultCell === 'empty') {
      defaults.set(variable, '');
      continue;
    }
    // One code span holding the value.
    const literal = /^`([^`]*)`$/.exec(defaultCell)?.[1];
    if (literal === undefined) {
      throw new Error(`${variable}'s default is not one literal value: ${defaultCell}`);
    }
    defaults.set(variable, literal.replaceAll('\\|', '|'));
  }
  return defaults;
}

describe('docs/configuration.md defaults', () => {
  it('when the page is read, then it documents a default for every variable of the schema', async () => {
    const defaults = await documentedDefaults();
    expect([...defaults.keys()]).toEqual(Object.keys(configSchema.shape));
  });

  it('when no default is shortened, then none holds an ellipsis', async () => {
    for (const [variable, value] of await documentedDefaults()) {
      expect(value ?? '', variable).not.toMatch(/\.\.\.|…/);
    }
  });

  it('when each variable alone is set to its documented default, then it parses to its unset value', async () => {
    const unset = loadConfig({});
    for (const [variable, value] of await documentedDefaults()) {
      if (value === undefined) continue;
      const config = loadConfig({ [variable]: value });
      expect(config[variable as keyof typeof config], `${variable}=${value}`).toEqual(
        unset[variable as keyof typeof unset],
      );
    }
  });

  it('when every variable is set to its documented default at once, then the configuration is the unset one', async () => {
    const env: Record<string, string> = {};
    for (const [variable, value] of await documentedDefaults()) {
      if (value !== undefined) env[variable] = value;
    }
    expect(Object.keys(env).length).toBeGreaterThan(100);
    expect(loadConfig(env)).toEqual(loadConfig({}));
  });
});
