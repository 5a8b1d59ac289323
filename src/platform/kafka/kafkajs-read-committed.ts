import { createRequire, Module } from 'node:module';

/**
 * kafkajs 2.2.4 hands read-committed consumers records of aborted transactions (DESIGN 134).
 * A fetch answer lists the aborted transactions of the range it covers, in the order they were
 * aborted; kafkajs walks that list in the order given and takes at most one entry per record,
 * so when two producers' aborted transactions interleave (A begins, B begins, B aborts, A
 * aborts), A's first record is passed on as if committed. Kafka's own consumer sorts the list
 * by first offset and takes every entry that begins at or before each batch.
 *
 * This module puts a correct filter in kafkajs' place: it seeds Node's module cache with it
 * before kafkajs loads (every module importing kafkajs imports this one first), and
 * `assertReadCommittedFilter()` (run by createKafka) fails at boot if kafkajs was loaded first.
 */

/** A record as kafkajs' Batch gives it to its filter. */
interface FetchedRecord {
  offset: string;
  key: Buffer | string | null;
  isControlRecord?: boolean;
  batchContext: { producerId: string; inTransaction: boolean };
}

/** An aborted transaction as a fetch answer lists it. */
interface AbortedTransaction {
  producerId: string;
  firstOffset: string;
}

/** A control record's key: version 0, then type 0 (abort) or 1 (commit). */
const ABORT_MARKER_KEY = Buffer.from([0, 0, 0, 0]);

function isAbortMarker(record: FetchedRecord): boolean {
  if (record.isControlRecord !== true || record.key === null) return false;
  return Buffer.from(record.key).equals(ABORT_MARKER_KEY);
}

/**
 * The records of `messages` (in offset order, control records included) that no aborted
 * transaction wrote: for each record, every listed transaction beginning at or before it marks
 * its producer aborted, until that producer's abort marker.
 */
export function filterAbortedMessages<T extends FetchedRecord>({
  messages,
  abortedTransactions,
}: {
  messages: T[];
  abortedTransactions?: AbortedTransaction[] | null;
}): T[] {
  if (!abortedTransactions || abortedTransactions.length === 0) return messages;
  const pending = [...abortedTransactions].sort((a, b) =>
    BigInt(a.firstOffset) < BigInt(b.firstOffset) ? -1 : 1,
  );
  const abortedProducers = new Set<string>();
  return messages.filter((record) => {
    const offset = BigInt(record.offset);
    while (pending.length > 0 && BigInt(pending[0]?.firstOffset ?? '0') <= offset) {
      const started = pending.shift();
      if (started) abortedProducers.add(started.producerId);
    }
    const { producerId, inTransaction } = record.batchContext;
    if (isAbortMarker(record)) {
      abortedProducers.delete(producerId);
      return true;
    }
    return !(inTransaction && abortedProducers.has(producerId));
  });
}

const require = createRequire(import.meta.url);
const FILTER_PATH = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
const BATCH_PATH = require.resolve('kafkajs/src/consumer/batch.js');

if (!(FILTER_PATH in require.cache)) {
  const replacement = new Module(FILTER_PATH);
  replacement.filename = FILTER_PATH;
  replacement.exports = filterAbortedMessages;
  replacement.loaded = true;
  require.cache[FILTER_PATH] = replacement;
}

/** kafkajs' Batch: built from one partition's part of a fetch answer. */
type BatchClass = new (
  topic: string,
  fetchedOffset: string,
  partitionData: {
    partition: number;
    highWatermark: string;
    abortedTransactions: AbortedTransaction[];
    messages: FetchedRecord[];
  },
) => { messages: FetchedRecord[] };

/**
 * Throws unless kafkajs filters with the function above: a fetch of two interleaved aborted
 * transactions and a committed record must give the committed record alone.
 */
export function assertReadCommittedFilter(): void {
  const Batch = require(BATCH_PATH) as BatchClass;
  const data = (offset: number, producerId: string): FetchedRecord => ({
    offset: String(offset),
    key: 'k',
    batchContext: { producerId, inTransaction: true },
  });
  const marker = (offset: number, producerId: string): FetchedRecord => ({
    offset: String(offset),
    key: ABORT_MARKER_KEY,
    isControlRecord: true,
    batchContext: { producerId, inTransaction: true },
  });
  const batch = new Batch('check', '0', {
    partition: 0,
    highWatermark: '4',
    // Listed in the order the broker aborted them: B (begun second) first.
    abortedTransactions: [
      { producerId: 'b', firstOffset: '1' },
      { producerId: 'a', firstOffset: '0' },
    ],
    messages: [data(0, 'a'), data(1, 'b'), marker(2, 'b'), marker(3, 'a'), data(4, 'c')],
  });
  const offsets = batch.messages.map((record) => record.offset);
  if (offsets.length !== 1 || offsets[0] !== '4') {
    throw new Error(
      'kafkajs was loaded before src/platform/kafka/kafkajs-read-committed.ts: its consumers would read records of aborted transactions (import that module before kafkajs)',
    );
  }
}
