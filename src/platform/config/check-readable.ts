import { ConfigError } from './config-error.js';

/** Throws a ConfigError naming setting `name` unless `file` can be read. */
export function checkReadable(
  name: string,
  file: string,
  readFile: (path: string) => string,
): void {
  try {
    readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'read error';
    throw new ConfigError(name, `names a file that cannot be read (${code}: ${file})`);
  }
}
