-- Per-key limits and the sign-in limiter counted for the whole fleet (docs/fleet.md "Limits across the fleet";
-- src/limits/fleet-key-limiter.ts, fleet-sign-in-limiter.ts, fleet-leases.ts).

-- Requests and tokens of a limited key per second of the database's clock: a sliding minute is its last 60 rows.
CREATE TABLE fleet_key_usage (
  key_id text NOT NULL,
  second bigint NOT NULL,
  requests integer NOT NULL DEFAULT 0,
  tokens bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, second)
);

-- What is in progress, held by a replica: a limited key's request (kind 'key', for maxConcurrent) or a password
-- check (kinds 'sign-in-email' / 'sign-in-address'). The holding replica renews its rows' expiry; a replica that
-- dies stops renewing, and its rows stop counting once expired.
CREATE TABLE fleet_leases (
  lease_id uuid NOT NULL,
  kind text NOT NULL,
  subject text NOT NULL,
  replica_id uuid NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (lease_id, kind)
);
CREATE INDEX fleet_leases_subject ON fleet_leases (kind, subject);
CREATE INDEX fleet_leases_replica ON fleet_leases (replica_id);

-- Failed sign-ins per minute of the database's clock, by email and by client address (each a SHA-256, never the
-- value itself).
CREATE TABLE fleet_sign_in_failures (
  kind text NOT NULL,
  subject text NOT NULL,
  minute bigint NOT NULL,
  failures integer NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, subject, minute)
);
