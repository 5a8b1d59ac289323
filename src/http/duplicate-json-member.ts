/**
 * The first member name that appears twice in one object of a JSON text, or null when every
 * object's names are unique (or the text is not JSON: the parser reports that).
 *
 * `JSON.parse` keeps the last of two equal names, so `{"amount":100,"amount":100000}` would be a
 * charge of 100000 while a proxy or log pipeline that keeps the first reads 100. A money API
 * refuses the ambiguity instead (I-JSON, RFC 7493: names MUST be unique). Names are compared
 * decoded, so `"a"` and `"\u0061"` are the same name. One pass over the text, no allocation but
 * one Set per object and the names themselves.
 */
export function duplicateJsonMember(text: string): string | null {
  /** One entry per open object (its names so far) or array (null). */
  const open: (Set<string> | null)[] = [];
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE) open.push(new Set());
    else if (c === OPEN_BRACKET) open.push(null);
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) open.pop();
    else if (c === QUOTE) {
      const end = closingQuote(text, i);
      if (end < 0) return null;
      const names = open[open.length - 1];
      if (names && isFollowedByColon(text, end + 1)) {
        const name = decodedName(text.slice(i + 1, end));
        if (name === null) return null;
        if (names.has(name)) return name;
        names.add(name);
      }
      i = end;
    }
  }
  return null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index of the quote that ends the string opened at `start`; -1 when it never ends. */
function closingQuote(text: string, start: number): number {
  for (let j = start + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === BACKSLASH) j++;
    else if (c === QUOTE) return j;
  }
  return -1;
}

/** Whether the next character after JSON whitespace is `:` (the string was a member name). */
function isFollowedByColon(text: string, from: number): boolean {
  for (let k = from; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    return c === COLON;
  }
  return false;
}

/** The name with its escapes decoded; null when an escape is invalid (not JSON). */
function decodedName(raw: string): string | null {
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return null;
  }
}
