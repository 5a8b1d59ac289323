-- Up Migration

-- Grants move out of migrations (issue 38, DESIGN 116): the runner applies
-- src/platform/database/service-grants.ts after every run, revoking what the list does not name.
-- grant_service_roles() (last re-created by 0028) would hand back the wider grants of old: it
-- goes. acquirer_books_shared() called it; now it only records the choice, and settlement gets
-- the books' grants back from the next `npm run migrate` (which applies the list, pending
-- migrations or not). Procedures only: no lock on a table.
DROP PROCEDURE grant_service_roles();

CREATE OR REPLACE PROCEDURE acquirer_books_shared() LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM acquirer_books_login;
END;
$$;
