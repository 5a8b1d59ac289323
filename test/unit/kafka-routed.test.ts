import type { Message, PartitionMetadata, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  recordingPartitioner,
  unacknowledgedPartitions,
} from '../../src/platform/kafka/kafka-routed.js';

const partitionMetadata: PartitionMetadata[] = [0, 1, 2, 3].map((partitionId) => ({
  partitionErrorCode: 0,
  partitionId,
  leader: partitionId % 3,
  replicas: [0, 1, 2],
  isr: [0, 1, 2],
}));

const ack = (topicName: string, partition: number): RecordMetadata => ({
  topicName,
  partition,
  errorCode: 0,
});

describe('which partitions of a send were acknowledged', () => {
  it('when a partition a message was routed to has no answer (kafkajs after a leader move), then it is named', () => {
    const route = recordingPartitioner();
    const messages: Message[] = ['a', 'b', 'c', 'd', 'e', 'f'].map((key) => ({ key, value: key }));
    const partitions = messages.map((message) =>
      route({ topic: 'payments', partitionMetadata, message }),
    );
    const distinct = [...new Set(partitions)].sort();
    expect(distinct.length).toBeGreaterThan(1);
    const [dropped, ...answered] = distinct;

    expect(
      unacknowledgedPartitions(
        messages,
        answered.map((p) => ack('payments', p)),
      ),
    ).toEqual([`payments:${String(dropped)}`]);
    expect(
      unacknowledgedPartitions(
        messages,
        distinct.map((p) => ack('payments', p)),
      ),
    ).toEqual([]);
    // The same partition number of another topic is not an answer for this one.
    expect(
      unacknowledgedPartitions(
        messages,
        distinct.map((p) => ack('other', p)),
      ),
    ).toHaveLength(distinct.length);
  });

  it('when messages never went through the recording partitioner, then they are not judged', () => {
    expect(unacknowledgedPartitions([{ key: 'x', value: 'x' }], [])).toEqual([]);
  });
});
