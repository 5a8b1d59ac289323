/**
 * Characters as Postgres' length() and JSON Schema's minLength/maxLength count them: code
 * points, not UTF-16 units (an emoji is one, where String#length says two).
 */
export function codePoints(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdbff) count++;
  }
  return count;
}
