-- The Batch API in a fleet (docs/batch-api.md; src/batch/postgres-batch-store.ts). Files are kept as 1 MiB bytea
-- chunks in a plain table: every replica reads them, they go with a DELETE, and they are in every backup.

CREATE TABLE batch_files (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  record jsonb NOT NULL
);
CREATE INDEX batch_files_by_account ON batch_files (account_id, created_at DESC, id DESC);

CREATE TABLE batch_file_chunks (
  file_id text NOT NULL,
  seq integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (file_id, seq)
);

CREATE TABLE batches (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  status text NOT NULL,
  created_at bigint NOT NULL, -- the record's `order` (ms, newest first in lists)
  record jsonb NOT NULL
);
CREATE INDEX batches_by_account ON batches (account_id, created_at DESC, id DESC);
CREATE INDEX batches_active ON batches (status) WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling');

-- One row per input line. A replica claims a line (claimed_by, claim_expires, renewed while it works on it); the
-- first answer recorded (result IS NULL -> the answer) wins, so a line is answered once whatever replica died.
CREATE TABLE batch_lines (
  batch_id text NOT NULL,
  idx integer NOT NULL,
  custom_id text NOT NULL,
  body text NOT NULL,
  claimed_by text,
  claim_expires timestamptz,
  ok boolean,
  result text,
  PRIMARY KEY (batch_id, idx)
);
CREATE INDEX batch_lines_open ON batch_lines (batch_id, idx) WHERE result IS NULL;
CREATE INDEX batch_lines_claimed ON batch_lines (claimed_by) WHERE claimed_by IS NOT NULL AND result IS NULL;
