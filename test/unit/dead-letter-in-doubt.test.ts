import { describe, expect, it } from 'vitest';
import {
  letterIdentity,
  withoutLetters,
} from '../../src/jobs/dead-letters/dead-letter-in-doubt.js';

describe('dead letters of an unanswered commit', () => {
  const letter = (key: string, value: string) => ({ key, value, headers: { event_id: key } });

  it('when a letter was read back from the topic as bytes, then it has the identity it was sent with', () => {
    expect(letterIdentity('dlq', 'p1', Buffer.from('{"a":1}'))).toBe(
      letterIdentity('dlq', 'p1', '{"a":1}'),
    );
    expect(letterIdentity('dlq', 'p1', '{"a":1}')).not.toBe(letterIdentity('dlq', 'p1', '{"a":2}'));
    expect(letterIdentity('dlq', 'p1', 'x')).not.toBe(letterIdentity('other', 'p1', 'x'));
  });

  it('when some letters of a batch are known to be on the topic, then only the others are sent, and an emptied topic is dropped', () => {
    const batches = [
      { topic: 'dlq', records: [letter('p1', 'one'), letter('p2', 'two')] },
      { topic: 'refunds-dlq', records: [letter('p3', 'three')] },
    ];
    const known = new Set([
      letterIdentity('dlq', 'p1', 'one'),
      letterIdentity('refunds-dlq', 'p3', 'three'),
    ]);
    expect(withoutLetters(batches, known)).toEqual([
      { topic: 'dlq', records: [letter('p2', 'two')] },
    ]);
    expect(withoutLetters(batches, new Set())).toEqual(batches);
  });
});
