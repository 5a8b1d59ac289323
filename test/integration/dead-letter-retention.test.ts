import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  purgePublishedDeadLetters,
  storeDeadLetter,
} from '../../src/jobs/dead-letters/dead-letter-store.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * Published dead letters are deleted after DEAD_LETTER_RETENTION_SECONDS by the settlement
 * login (the topic is the record); an unpublished letter is the only copy and is never deleted,
 * however old.
 */

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db.drop();
});

async function letter(key: string, publishedAgo: string | null, createdAgo: string) {
  await storeDeadLetter(db.login('settlement'), {
    dedupKey: key,
    eventId: null,
    topic: 'payments.settlement.dlq',
    record: { key, value: key, headers: {} },
  });
  await db.pool.query(
    `UPDATE dead_letters
        SET created_at = now() - $2::interval,
            published_at = CASE WHEN $3::interval IS NULL THEN NULL ELSE now() - $3::interval END
      WHERE dedup_key = $1`,
    [key, createdAgo, publishedAgo],
  );
}

describe('dead-letter retention', () => {
  it('when letters were published longer ago than the retention, then only those are deleted: recent ones and unpublished ones stay', async () => {
    await letter('old-published', '8 days', '9 days');
    await letter('recent-published', '1 hour', '9 days');
    await letter('old-unpublished', null, '30 days');

    const deleted = await purgePublishedDeadLetters(db.login('settlement'), 7 * 86_400);

    expect(deleted).toBe(1);
    const { rows } = await db.pool.query<{ dedup_key: string }>(
      'SELECT dedup_key FROM dead_letters ORDER BY dedup_key',
    );
    expect(rows.map((row) => row.dedup_key)).toEqual(['old-unpublished', 'recent-published']);
    expect(await purgePublishedDeadLetters(db.login('settlement'), 7 * 86_400)).toBe(0);
  });
});
