import { describe, expect, it } from 'vitest';
import { isRecordRejected } from '../../src/platform/kafka/kafka.js';

/** An error shaped like kafkajs' (name, protocol `type`, `cause` when it wraps another). */
function kafkaError(name: string, type?: string, cause?: Error): Error {
  const error = new Error(`${name} ${type ?? ''}`, { cause });
  error.name = name;
  return Object.assign(error, type === undefined ? {} : { type });
}

describe('isRecordRejected', () => {
  it('when the broker refuses the records themselves, then it is a rejection, also wrapped', () => {
    expect(isRecordRejected(kafkaError('KafkaJSProtocolError', 'MESSAGE_TOO_LARGE'))).toBe(true);
    expect(isRecordRejected(kafkaError('KafkaJSProtocolError', 'INVALID_RECORD'))).toBe(true);
    const wrapped = kafkaError(
      'KafkaJSNonRetriableError',
      undefined,
      kafkaError('KafkaJSProtocolError', 'RECORD_LIST_TOO_LARGE'),
    );
    expect(isRecordRejected(wrapped)).toBe(true);
  });

  it('when the cluster is the problem, then it is not a rejection (no attempt is counted)', () => {
    const refused = kafkaError('KafkaJSConnectionError');
    expect(isRecordRejected(refused)).toBe(false);
    expect(isRecordRejected(kafkaError('KafkaJSNumberOfRetriesExceeded', undefined, refused))).toBe(
      false,
    );
    expect(isRecordRejected(kafkaError('KafkaJSProtocolError', 'NOT_LEADER_FOR_PARTITION'))).toBe(
      false,
    );
    expect(isRecordRejected(kafkaError('KafkaJSProtocolError', 'UNKNOWN_TOPIC_OR_PARTITION'))).toBe(
      false,
    );
    expect(isRecordRejected('not an error')).toBe(false);
  });
});
