import type { ReceiverMode } from './receiver.js';

/**
 * A receiver mode from its command-line form: `ok`, `gone`, `fail-first:<attempts>`,
 * `fail-for:<seconds>` (500 until that long after `now`) or `hang-for:<seconds>`. Throws with a
 * line naming the forms on anything else.
 */
export function parseReceiverMode(text: string, now = Date.now()): ReceiverMode {
  const [kind = '', value = ''] = text.split(':', 2);
  const number = () => {
    if (!/^\d+(\.\d+)?$/.test(value)) throw new Error(`--mode ${kind} needs a number: ${text}`);
    return Number(value);
  };
  switch (kind) {
    case 'ok':
      return { kind: 'ok' };
    case 'gone':
      return { kind: 'gone' };
    case 'fail-first':
      return { kind: 'fail-first', attempts: number() };
    case 'fail-for':
      return { kind: 'fail-until', until: new Date(now + number() * 1000) };
    case 'hang-for':
      return { kind: 'hang', until: new Date(now + number() * 1000) };
    default:
      throw new Error(
        `--mode must be ok, fail-first:<n>, fail-for:<seconds>, hang-for:<seconds> or gone (got ${text})`,
      );
  }
}
