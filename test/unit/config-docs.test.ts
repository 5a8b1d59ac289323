import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/platform/config/config.js';
import {
  configRows,
  readConfigBlock,
  renderConfigTable,
  replaceConfigBlock,
} from '../../tools/docs/config-table.js';

const CONFIG_DOC = path.resolve(import.meta.dirname, '../../docs/configuration.md');

describe('docs/configuration.md table', () => {
  it('when the schema is rendered, then every variable has a default and a description', () => {
    const rows = configRows();
    expect(rows.map((row) => row.variable)).toEqual(Object.keys(configSchema.shape));
    for (const row of rows) {
      expect(row.defaultValue, row.variable).not.toBe('');
      expect(row.description.length, row.variable).toBeGreaterThan(10);
    }
  });

  it('when docs/configuration.md is read, then its table is the one generated from the schema', async () => {
    const page = await readFile(CONFIG_DOC, 'utf8');
    const table = await renderConfigTable(CONFIG_DOC);
    if (process.env.UPDATE_CONFIG_DOCS === '1') {
      await writeFile(CONFIG_DOC, replaceConfigBlock(page, table));
      return;
    }
    expect(
      readConfigBlock(page),
      'docs/configuration.md table is out of date: run `npm run docs:config`',
    ).toBe(table.trim());
  });
});
