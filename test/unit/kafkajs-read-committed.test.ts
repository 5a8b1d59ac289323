import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  assertReadCommittedFilter,
  filterAbortedMessages,
} from '../../src/platform/kafka/kafkajs-read-committed.js';

const data = (offset: number, producerId: string, inTransaction = true) => ({
  offset: String(offset),
  key: Buffer.from('k'),
  batchContext: { producerId, inTransaction },
});
const marker = (offset: number, producerId: string, type: 0 | 1) => ({
  offset: String(offset),
  key: Buffer.from([0, 0, 0, type]),
  isControlRecord: true,
  batchContext: { producerId, inTransaction: true },
});
const offsets = (records: { offset: string; isControlRecord?: boolean }[]) =>
  records.filter((record) => record.isControlRecord !== true).map((record) => record.offset);

describe('the read-committed filter put in kafkajs’ place', () => {
  it('when aborted transactions are listed in the order they aborted, not begun, then none of their records passes', () => {
    const messages = [
      data(0, 'a'),
      data(1, 'b'),
      data(2, 'a'),
      marker(3, 'b', 0),
      marker(4, 'a', 0),
      data(5, 'c'),
    ];
    const abortedTransactions = [
      { producerId: 'b', firstOffset: '1' },
      { producerId: 'a', firstOffset: '0' },
    ];
    expect(offsets(filterAbortedMessages({ messages, abortedTransactions }))).toEqual(['5']);
  });

  it('when the fetch begins inside two aborted transactions, then every record before their markers is dropped', () => {
    const messages = [
      data(10, 'b'),
      data(11, 'a'),
      marker(12, 'a', 0),
      marker(13, 'b', 0),
      data(14, 'c'),
    ];
    const abortedTransactions = [
      { producerId: 'a', firstOffset: '3' },
      { producerId: 'b', firstOffset: '5' },
    ];
    expect(offsets(filterAbortedMessages({ messages, abortedTransactions }))).toEqual(['14']);
  });

  it('when a producer commits after its aborted transaction, or writes outside transactions, then those records pass', () => {
    const messages = [
      data(0, 'a'),
      data(1, 'x', false),
      marker(2, 'a', 0),
      data(3, 'a'),
      marker(4, 'a', 1),
    ];
    const abortedTransactions = [{ producerId: 'a', firstOffset: '0' }];
    expect(offsets(filterAbortedMessages({ messages, abortedTransactions }))).toEqual(['1', '3']);
  });

  it('when a data record’s key looks like an abort marker, then it does not end the aborted transaction', () => {
    const lookalike = { ...data(1, 'a'), key: Buffer.from([0, 0, 0, 0]) };
    const messages = [data(0, 'a'), lookalike, data(2, 'a'), marker(3, 'a', 0)];
    const abortedTransactions = [{ producerId: 'a', firstOffset: '0' }];
    expect(offsets(filterAbortedMessages({ messages, abortedTransactions }))).toEqual([]);
  });

  it('when nothing aborted, then every record passes', () => {
    const messages = [data(0, 'a'), marker(1, 'a', 1)];
    expect(filterAbortedMessages({ messages, abortedTransactions: [] })).toEqual(messages);
  });

  it('when loaded before kafkajs, then kafkajs’ consumer batches use it', () => {
    const require = createRequire(import.meta.url);
    expect(require('kafkajs/src/consumer/filterAbortedMessages.js')).toBe(filterAbortedMessages);
    assertReadCommittedFilter();
  });
});
