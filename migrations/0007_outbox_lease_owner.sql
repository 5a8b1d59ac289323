-- Up Migration

-- Who holds a row's lease: a random token per claim, set by the claim and checked by every
-- later write on the row (mark published, release, count a failed attempt, park). A relay whose
-- lease ran out while another relay claimed the row then changes nothing (0 rows). No index
-- covers the column, so the claim stays a HOT update (migration 0004).
ALTER TABLE outbox ADD COLUMN lease_owner uuid;

-- Down Migration

ALTER TABLE outbox DROP COLUMN lease_owner;
