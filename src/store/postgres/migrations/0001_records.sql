-- Hearth's records in PostgreSQL (src/store/postgres/postgres-store.ts).
-- One table for every record kind: `tbl` names the kind (a RecordTables field: users, apiKeys, index, ...),
-- `key` is the record's key as text (array keys of the index as JSON), `value` the record as JSON text (json,
-- not jsonb: the stored text and its key order come back unchanged). Every write is stamped with the next
-- value of one global sequence, taken under the fleet-wide write lock, so "every row with seq > N" is exactly
-- what a replica that has seen N lacks. A removed record stays as a tombstone (value NULL) so that the same
-- catch-up query returns removals too; tombstones older than an hour are pruned and `records_horizon` says up
-- to which seq, so a replica behind it reloads everything instead.
CREATE SEQUENCE hearth_record_seq;

CREATE TABLE records (
  tbl text NOT NULL,
  key text NOT NULL,
  value json,
  seq bigint NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tbl, key)
);

CREATE INDEX records_seq ON records (seq);

CREATE TABLE records_horizon (
  id int PRIMARY KEY CHECK (id = 1),
  pruned_through bigint NOT NULL
);

INSERT INTO records_horizon (id, pruned_through) VALUES (1, 0);
