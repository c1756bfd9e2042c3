-- fenced_update.sql: fenced writes to a SQL table, for SQLite (3.37+) and PostgreSQL (9.5+).
--
-- Each row remembers the highest fencing token that wrote it. A write carries the writer's
-- token and is admitted only when that token is >= the stored one (equal: the same holder
-- writing again). The check is the WHERE clause of the write itself, so the database makes it
-- atomic: no other write to the row can come between the check and the change.
--
-- The number of changed rows is the answer: 1 = admitted, 0 = stale (nothing was written).
--   SQLite:     sqlite3_changes() after the statement is done.
--   PostgreSQL: the command tag ("UPDATE 0", "INSERT 0 0"), PQcmdTuples(), or use RETURNING.
--
-- Here one row is one fenced item. When several rows are protected by one lock, keep the fence
-- in its own row (one per lock) and, in one transaction, update that fence row with the
-- statements below first and write the data rows only when it changed 1 row.
--
-- Each statement below is a block that starts with a "-- name: <dialect>.<name>" line; the
-- integration test (tests/integration/recipes_test.cpp) runs the sqlite.* blocks verbatim.
--
-- Dialect differences:
--   * Parameters: SQLite takes named parameters (:key, :value, :token), bound by name;
--     PostgreSQL takes positional ones ($1 = key, $2 = value, $3 = token).
--   * Types: SQLite INTEGER is a signed 64-bit integer; the table is STRICT (3.37+) so a token
--     that is not an integer is an error instead of being stored as text (which compares
--     greater than every integer). Drop STRICT for an older SQLite and always bind the token
--     as an integer.
--     PostgreSQL uses BIGINT. Neither holds a token above 2^63 - 1.
--   * Upsert: both use INSERT ... ON CONFLICT (key) DO UPDATE SET ... WHERE ...; the proposed
--     row is "excluded" in both (PostgreSQL spells it EXCLUDED, case does not matter). SQLite
--     needs 3.24+ for the upsert (3.35+ for RETURNING, not used here).
--   * Concurrency: SQLite has one writer at a time, so each statement is atomic as is (set a
--     busy timeout so concurrent writers wait instead of failing with SQLITE_BUSY). PostgreSQL
--     under READ COMMITTED re-checks the UPDATE's WHERE clause against the newest row version
--     after waiting for a concurrent writer, and ON CONFLICT DO UPDATE locks the conflicting
--     row before it evaluates its WHERE clause, so both stay atomic without a stronger
--     isolation level. Do not split them into a SELECT followed by an UPDATE.

-- name: sqlite.create_table
CREATE TABLE IF NOT EXISTS fenced_data (
  key         TEXT    PRIMARY KEY,
  value       TEXT    NOT NULL,
  fence_token INTEGER NOT NULL
) STRICT;

-- name: sqlite.update
-- Overwrites an existing row; 0 rows changed = stale token (or no such row).
UPDATE fenced_data
   SET value = :value, fence_token = :token
 WHERE key = :key AND fence_token <= :token;

-- name: sqlite.upsert
-- Inserts the row when absent, else overwrites it if the token is not lower.
-- 1 row changed = written (inserted or updated), 0 rows changed = stale token.
INSERT INTO fenced_data AS t (key, value, fence_token)
VALUES (:key, :value, :token)
ON CONFLICT (key) DO UPDATE
   SET value = excluded.value, fence_token = excluded.fence_token
 WHERE excluded.fence_token >= t.fence_token;

-- name: sqlite.read
-- Reads the value and the fence, e.g. to report the token that a stale writer lost against.
SELECT value, fence_token FROM fenced_data WHERE key = :key;

-- name: postgresql.create_table
CREATE TABLE IF NOT EXISTS fenced_data (
  key         TEXT   PRIMARY KEY,
  value       TEXT   NOT NULL,
  fence_token BIGINT NOT NULL
);

-- name: postgresql.update
-- $1 = key, $2 = value, $3 = token. Command tag "UPDATE 0" = stale token (or no such row).
UPDATE fenced_data
   SET value = $2, fence_token = $3
 WHERE key = $1 AND fence_token <= $3;

-- name: postgresql.upsert
-- $1 = key, $2 = value, $3 = token. "INSERT 0 1" = written, "INSERT 0 0" = stale token.
-- RETURNING yields one row when written and none when stale.
INSERT INTO fenced_data AS t (key, value, fence_token)
VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE
   SET value = EXCLUDED.value, fence_token = EXCLUDED.fence_token
 WHERE EXCLUDED.fence_token >= t.fence_token
RETURNING fence_token;

-- name: postgresql.read
SELECT value, fence_token FROM fenced_data WHERE key = $1;
