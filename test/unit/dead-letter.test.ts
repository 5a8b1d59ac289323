import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DLQ_HEADERS, toDeadLetter } from '../../src/jobs/dead-letters/dead-letter.js';

describe('toDeadLetter', () => {
  const record = {
    topic: 'payments.events',
    partition: 2,
    offset: '41',
    key: 'k',
    value: '{"a":1}',
  };
  const reason = {
    eventId: '6f1c2a8e-3b4d-5e6f-8a9b-0c1d2e3f4a5b',
    errorClass: 'acquirer_unavailable',
    errorMessage: 'down',
    attempts: 5,
    firstFailureAt: new Date('2026-01-01T00:00:00Z'),
    lastFailureAt: new Date('2026-01-01T00:00:09Z'),
  };

  it('when a record is dead-lettered, then key and value are unchanged and the headers say why', () => {
    const letter = toDeadLetter(record, reason);
    expect(letter.key).toBe('k');
    expect(letter.value).toBe('{"a":1}');
    expect(letter.headers).toEqual({
      dlq_original_topic: 'payments.events',
      dlq_original_partition: '2',
      dlq_original_offset: '41',
      dlq_event_id: reason.eventId,
      ce_id: reason.eventId,
      dlq_error_class: 'acquirer_unavailable',
      dlq_error_message: 'down',
      dlq_attempts: '5',
      dlq_first_failure_at: '2026-01-01T00:00:00.000Z',
      dlq_last_failure_at: '2026-01-01T00:00:09.000Z',
    });
  });

  it('when the AsyncAPI document describes dead letters, then it names every header the code sets', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/asyncapi.yaml'), 'utf8');
    for (const header of Object.values(DLQ_HEADERS)) expect(doc, header).toContain(`${header}:`);
  });
});
