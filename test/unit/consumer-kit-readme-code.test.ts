import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// src/consumer-kit/README.md's TypeScript example, type-checked against the kit as it is (the
// README is what a consumer copies): compiled in memory as if it were a file of src/, with the
// names it takes from the reader's program declared.

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = path.join(ROOT, 'src/consumer-kit/README.md');
const SNIPPET = path.join(ROOT, 'src/readme-snippet.ts');
const READER = `
declare const kafka: import('kafkajs').Kafka;
declare const pool: import('pg').Pool;
declare const logger: { warn(fields: unknown, message: string): void };
declare function fetchPayment(id: string): Promise<Record<string, unknown> | null>;
`;

function diagnosticsOf(code: string): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const host = ts.createCompilerHost(config.options);
  const source = `${READER}\n${code}\nexport {};\n`;
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === SNIPPET
      ? ts.createSourceFile(name, source, language)
      : getSourceFile(name, language, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === SNIPPET || fileExists(name);
  const program = ts.createProgram([SNIPPET], config.options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(SNIPPET))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('src/consumer-kit/README.md', () => {
  it('when its TypeScript example is compiled against the kit, then it type-checks', () => {
    const blocks = [...readFileSync(README, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)];
    expect(blocks).toHaveLength(1);
    expect(diagnosticsOf(blocks[0]?.[1] ?? '')).toEqual([]);
  }, 60_000);

  it('when the example misuses the kit, then the check fails (it can fail)', () => {
    expect(
      diagnosticsOf(`import { createInboxConsumer } from './consumer-kit/consumer-kit.js';
createInboxConsumer({ kafka, groupId: 'g', pool, handler: async () => {}, onGap: () => ({ action: 'drop' }) });`),
    ).not.toEqual([]);
  }, 60_000);
});
