import { describe, expect, it } from 'vitest';
import { duplicateJsonMember } from '../../src/http/duplicate-json-member.js';

describe('duplicateJsonMember', () => {
  it.each([
    ['{"amount":100,"amount":100000,"currency":"EUR"}', 'amount'],
    ['{ "a" : 1 ,\n\t"a"\r\n: 2 }', 'a'],
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{"metadata":{"k":"x","k":"y"}}', 'k'],
    ['[{"ok":1},{"b":[1,{"c":1,"c":2}]}]', 'c'],
    ['{"a\\"b":1,"a\\"b":2}', 'a"b'],
    ['{"":1,"":2}', ''],
  ])('finds the repeated name in %j', (text, name) => {
    expect(duplicateJsonMember(text)).toBe(name);
  });

  it.each([
    '{"amount":100,"currency":"EUR"}',
    // The same name in different objects, at different depths, or as a value is not a repeat.
    '{"a":{"a":{"a":1}},"b":{"a":2}}',
    '[{"a":1},{"a":2}]',
    '{"a":"a","b":"a"}',
    '{"a":["a","a"]}',
    // Braces, brackets, quotes and colons inside strings are text, not structure.
    '{"a":"}{\\"a\\":","b":"[:","c":"\\\\"}',
    // Case differs: two names.
    '{"a":1,"A":2}',
    '"just a string"',
    '42',
    '',
  ])('finds none in %j', (text) => {
    expect(duplicateJsonMember(text)).toBeNull();
  });

  it('leaves text that is not JSON to the parser', () => {
    expect(duplicateJsonMember('{"a":1,"unterminated')).toBeNull();
    expect(duplicateJsonMember('{"\\x":1,"\\x":2}')).toBeNull();
  });

  it('scans a body at the size limit in one pass', () => {
    const members = Array.from({ length: 5_000 }, (_, i) => `"k${i}":"${'v'.repeat(10)}"`);
    expect(duplicateJsonMember(`{${members.join(',')}}`)).toBeNull();
    expect(duplicateJsonMember(`{${members.join(',')},"k4999":1}`)).toBe('k4999');
  });
});
