//! The store's schema: tables, sequences and the PL/pgSQL functions every write
//! runs as one statement. `@S` stands for the quoted schema name.
//!
//! Migrations are numbered: `MIGRATIONS[i]` takes the schema from version `i` to
//! `i + 1`. `meta.schema_version` records the version reached; a schema newer
//! than [`SCHEMA_VERSION`] is refused.

/// The schema version this build writes and understands.
pub(crate) const SCHEMA_VERSION: i32 = 3;

/// What `meta.format` holds: foreign tables named `meta` are refused.
pub(crate) const FORMAT: &str = "dream-postgres";

/// Function status: success.
pub(crate) const OK: i32 = 0;
/// Function status: the precondition failed; the current version (if any) follows.
pub(crate) const CONFLICT: i32 = 1;
/// Function status: the fence is not the lock's newest live lease.
pub(crate) const LOCK_LOST: i32 = 2;
/// Function status: the meta row is missing (the store's data was lost).
pub(crate) const EPOCH_MISSING: i32 = 3;
/// Function status: the epoch differs (the store was re-created).
pub(crate) const EPOCH_CHANGED: i32 = 4;

/// The epoch check every function starts with.
const EPOCH_CHECK: &str = r#"
  SELECT m.epoch INTO v_epoch FROM @S.meta m;
  IF NOT FOUND THEN o_status := 3; RETURN; END IF;
  IF v_epoch IS DISTINCT FROM p_epoch THEN o_status := 4; RETURN; END IF;
"#;

/// The fence check of put and delete. The lease row is locked FOR SHARE first
/// (a takeover's UPDATE waits for this transaction to end), then read again in a
/// fresh statement, so the fence and the server's clock are checked after the
/// lock is held: the write commits before any newer lease can be granted.
const FENCE_CHECK: &str = r#"
  IF p_lock IS NOT NULL THEN
    PERFORM 1 FROM @S.leases l WHERE l.lock = p_lock FOR SHARE;
    SELECT l.fence, (NOT l.released AND l.expires_at > clock_timestamp())
      INTO v_fence, v_live
      FROM @S.leases l WHERE l.lock = p_lock;
    IF NOT FOUND OR v_fence IS DISTINCT FROM p_token OR NOT v_live THEN
      o_status := 2; RETURN;
    END IF;
  END IF;
"#;

/// Version 0 → 1: the tables, sequences and functions.
const V1: &str = r#"
CREATE TABLE @S.meta (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  format text NOT NULL,
  schema_version integer NOT NULL,
  epoch text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE SEQUENCE @S.versions AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE @S.fences AS bigint MINVALUE 1 NO CYCLE;
CREATE TABLE @S.records (
  namespace text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  version bigint NOT NULL,
  value bytea NOT NULL,
  write_id text NOT NULL,
  PRIMARY KEY (namespace, id)
);
CREATE TABLE @S.leases (
  lock text COLLATE "C" PRIMARY KEY,
  fence bigint NOT NULL,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL,
  released boolean NOT NULL DEFAULT false
);

CREATE FUNCTION @S.put(p_epoch text, p_ns text, p_id text, p_pre text, p_expected bigint,
    p_value bytea, p_write_id text, p_lock text, p_token bigint,
    OUT o_status integer, OUT o_version bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_epoch text;
  v_fence bigint;
  v_live boolean;
BEGIN
@EPOCH_CHECK
@FENCE_CHECK
  IF p_pre = 'absent' THEN
    INSERT INTO @S.records AS r (namespace, id, version, value, write_id)
      VALUES (p_ns, p_id, nextval('@S.versions'), p_value, p_write_id)
      ON CONFLICT (namespace, id) DO NOTHING
      RETURNING r.version INTO o_version;
    IF NOT FOUND THEN
      SELECT r.version INTO o_version FROM @S.records r WHERE r.namespace = p_ns AND r.id = p_id;
      o_status := 1; RETURN;
    END IF;
  ELSIF p_pre = 'matches' THEN
    UPDATE @S.records AS r
      SET version = nextval('@S.versions'), value = p_value, write_id = p_write_id
      WHERE r.namespace = p_ns AND r.id = p_id AND r.version = p_expected
      RETURNING r.version INTO o_version;
    IF NOT FOUND THEN
      SELECT r.version INTO o_version FROM @S.records r WHERE r.namespace = p_ns AND r.id = p_id;
      o_status := 1; RETURN;
    END IF;
  ELSE
    INSERT INTO @S.records AS r (namespace, id, version, value, write_id)
      VALUES (p_ns, p_id, nextval('@S.versions'), p_value, p_write_id)
      ON CONFLICT (namespace, id) DO UPDATE
        SET version = nextval('@S.versions'), value = EXCLUDED.value, write_id = EXCLUDED.write_id
      RETURNING r.version INTO o_version;
  END IF;
  o_status := 0;
END
$fn$;

CREATE FUNCTION @S.del(p_epoch text, p_ns text, p_id text, p_pre text, p_expected bigint,
    p_lock text, p_token bigint,
    OUT o_status integer, OUT o_version bigint, OUT o_deleted boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_epoch text;
  v_fence bigint;
  v_live boolean;
BEGIN
  o_deleted := false;
@EPOCH_CHECK
@FENCE_CHECK
  IF p_pre = 'matches' THEN
    DELETE FROM @S.records r
      WHERE r.namespace = p_ns AND r.id = p_id AND r.version = p_expected
      RETURNING r.version INTO o_version;
    IF NOT FOUND THEN
      SELECT r.version INTO o_version FROM @S.records r WHERE r.namespace = p_ns AND r.id = p_id;
      o_status := 1; RETURN;
    END IF;
    o_deleted := true;
  ELSIF p_pre = 'absent' THEN
    SELECT r.version INTO o_version FROM @S.records r WHERE r.namespace = p_ns AND r.id = p_id;
    IF FOUND THEN o_status := 1; RETURN; END IF;
  ELSE
    DELETE FROM @S.records r WHERE r.namespace = p_ns AND r.id = p_id
      RETURNING r.version INTO o_version;
    o_deleted := FOUND;
  END IF;
  o_status := 0;
END
$fn$;

CREATE FUNCTION @S.acquire(p_epoch text, p_lock text, p_holder text, p_ttl_ms bigint,
    OUT o_status integer, OUT o_token bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_epoch text;
BEGIN
@EPOCH_CHECK
  INSERT INTO @S.leases AS l (lock, fence, holder, expires_at, released)
    VALUES (p_lock, nextval('@S.fences'), p_holder,
            clock_timestamp() + p_ttl_ms * interval '1 millisecond', false)
    ON CONFLICT (lock) DO UPDATE
      SET fence = nextval('@S.fences'), holder = EXCLUDED.holder,
          expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond',
          released = false
      WHERE l.released OR l.expires_at <= clock_timestamp()
    RETURNING l.fence INTO o_token;
  o_status := 0;
END
$fn$;

CREATE FUNCTION @S.renew(p_epoch text, p_lock text, p_holder text, p_token bigint,
    p_ttl_ms bigint, OUT o_status integer, OUT o_ok boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_epoch text;
BEGIN
@EPOCH_CHECK
  UPDATE @S.leases l
    SET expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
    WHERE l.lock = p_lock AND l.holder = p_holder AND l.fence = p_token
      AND NOT l.released AND l.expires_at > clock_timestamp();
  o_ok := FOUND;
  o_status := 0;
END
$fn$;

CREATE FUNCTION @S.release(p_epoch text, p_lock text, p_holder text, p_token bigint,
    OUT o_status integer, OUT o_ok boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_epoch text;
BEGIN
@EPOCH_CHECK
  UPDATE @S.leases l SET released = true
    WHERE l.lock = p_lock AND l.holder = p_holder AND l.fence = p_token
      AND NOT l.released AND l.expires_at > clock_timestamp();
  o_ok := FOUND;
  o_status := 0;
END
$fn$;
"#;

/// Version 1 → 2: atomic batches. `S.batches` remembers, for a day, the
/// outcomes of each committed batch under its random write id: the batch
/// function claims its write id first (a second attempt of the same batch waits
/// for the first, then returns its outcomes instead of applying it twice), and a
/// client that lost its connection reads the outcomes back.
///
/// `S.write_batch` takes the operations as parallel arrays (a `NULL` value is a
/// delete). After the epoch check, everything runs in one block: the claim, the
/// fence check (as `@FENCE_CHECK`, by the server's clock), a lock of the batch's
/// existing rows in key order (so racing batches do not deadlock on them), then
/// each operation in order as the single-operation functions do it, versions
/// from `S.versions`. The keys are distinct, so an operation's precondition seen
/// when it runs is the state before the batch. A lost fence or a failed
/// precondition raises an error the block catches: everything the block did
/// (claim included) is rolled back, and the status says why (for a conflict,
/// the operation's 1-based index and the record's current version).
const V2: &str = r#"
CREATE TABLE @S.batches (
  write_id text COLLATE "C" PRIMARY KEY,
  outcomes bigint[] NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX batches_committed_at ON @S.batches (committed_at);

CREATE FUNCTION @S.write_batch(p_epoch text, p_write_id text, p_lock text, p_token bigint,
    p_ns text[], p_ids text[], p_pres text[], p_expected bigint[], p_values bytea[],
    OUT o_status integer, OUT o_index integer, OUT o_version bigint, OUT o_outcomes bigint[])
LANGUAGE plpgsql AS $fn$
DECLARE
  v_epoch text;
  v_fence bigint;
  v_live boolean;
  v_n integer := coalesce(array_length(p_ids, 1), 0);
  v_i integer;
  v_version bigint;
  v_outcomes bigint[] := '{}';
BEGIN
@EPOCH_CHECK
  BEGIN
    INSERT INTO @S.batches AS b (write_id, outcomes) VALUES (p_write_id, '{}')
      ON CONFLICT (write_id) DO NOTHING;
    IF NOT FOUND THEN
      -- An earlier attempt of this very batch committed: its outcomes.
      SELECT b.outcomes INTO o_outcomes FROM @S.batches b WHERE b.write_id = p_write_id;
      o_status := 0; RETURN;
    END IF;
    IF p_lock IS NOT NULL THEN
      PERFORM 1 FROM @S.leases l WHERE l.lock = p_lock FOR SHARE;
      SELECT l.fence, (NOT l.released AND l.expires_at > clock_timestamp())
        INTO v_fence, v_live
        FROM @S.leases l WHERE l.lock = p_lock;
      IF NOT FOUND OR v_fence IS DISTINCT FROM p_token OR NOT v_live THEN
        o_status := 2;
        RAISE EXCEPTION USING ERRCODE = 'DRB01';
      END IF;
    END IF;
    PERFORM 1 FROM @S.records r
      JOIN unnest(p_ns, p_ids) AS k(namespace, id) ON r.namespace = k.namespace AND r.id = k.id
      ORDER BY r.namespace, r.id
      FOR UPDATE OF r;
    FOR v_i IN 1 .. v_n LOOP
      v_version := NULL;
      IF p_values[v_i] IS NOT NULL THEN
        IF p_pres[v_i] = 'absent' THEN
          INSERT INTO @S.records AS r (namespace, id, version, value, write_id)
            VALUES (p_ns[v_i], p_ids[v_i], nextval('@S.versions'), p_values[v_i], p_write_id)
            ON CONFLICT (namespace, id) DO NOTHING
            RETURNING r.version INTO v_version;
        ELSIF p_pres[v_i] = 'matches' THEN
          UPDATE @S.records AS r
            SET version = nextval('@S.versions'), value = p_values[v_i], write_id = p_write_id
            WHERE r.namespace = p_ns[v_i] AND r.id = p_ids[v_i] AND r.version = p_expected[v_i]
            RETURNING r.version INTO v_version;
        ELSE
          INSERT INTO @S.records AS r (namespace, id, version, value, write_id)
            VALUES (p_ns[v_i], p_ids[v_i], nextval('@S.versions'), p_values[v_i], p_write_id)
            ON CONFLICT (namespace, id) DO UPDATE
              SET version = nextval('@S.versions'), value = EXCLUDED.value, write_id = EXCLUDED.write_id
            RETURNING r.version INTO v_version;
        END IF;
        IF v_version IS NULL THEN
          SELECT r.version INTO o_version FROM @S.records r
            WHERE r.namespace = p_ns[v_i] AND r.id = p_ids[v_i];
          o_status := 1; o_index := v_i;
          RAISE EXCEPTION USING ERRCODE = 'DRB02';
        END IF;
        v_outcomes := v_outcomes || v_version;
      ELSE
        IF p_pres[v_i] = 'matches' THEN
          DELETE FROM @S.records r
            WHERE r.namespace = p_ns[v_i] AND r.id = p_ids[v_i] AND r.version = p_expected[v_i]
            RETURNING r.version INTO v_version;
          IF v_version IS NULL THEN
            SELECT r.version INTO o_version FROM @S.records r
              WHERE r.namespace = p_ns[v_i] AND r.id = p_ids[v_i];
            o_status := 1; o_index := v_i;
            RAISE EXCEPTION USING ERRCODE = 'DRB02';
          END IF;
          v_outcomes := v_outcomes || 1::bigint;
        ELSIF p_pres[v_i] = 'absent' THEN
          SELECT r.version INTO o_version FROM @S.records r
            WHERE r.namespace = p_ns[v_i] AND r.id = p_ids[v_i];
          IF FOUND THEN
            o_status := 1; o_index := v_i;
            RAISE EXCEPTION USING ERRCODE = 'DRB02';
          END IF;
          v_outcomes := v_outcomes || 0::bigint;
        ELSE
          DELETE FROM @S.records r WHERE r.namespace = p_ns[v_i] AND r.id = p_ids[v_i]
            RETURNING r.version INTO v_version;
          v_outcomes := v_outcomes || (CASE WHEN v_version IS NULL THEN 0 ELSE 1 END)::bigint;
        END IF;
      END IF;
    END LOOP;
    UPDATE @S.batches b SET outcomes = v_outcomes WHERE b.write_id = p_write_id;
    -- Forget old batches, a few at a time, never waiting on another's.
    DELETE FROM @S.batches b WHERE b.write_id IN (
      SELECT o.write_id FROM @S.batches o
        WHERE o.committed_at < clock_timestamp() - interval '1 day'
        ORDER BY o.committed_at LIMIT 16 FOR UPDATE SKIP LOCKED);
    o_outcomes := v_outcomes;
    o_status := 0;
  EXCEPTION WHEN SQLSTATE 'DRB01' OR SQLSTATE 'DRB02' THEN
    -- o_status (and for a conflict o_index, o_version) were set before raising;
    -- the block's writes, claim included, are rolled back.
    o_outcomes := NULL;
  END;
END
$fn$;
"#;

/// Version 2 → 3: change notices. After every statement that changes
/// `S.records`, a trigger sends an empty `NOTIFY` on the schema's channel
/// ([`CHANNEL_SQL`]), delivered when the transaction commits; readers waiting
/// for changes wake early
/// ([`watch_changes`](dream_core::RecordStore::watch_changes)). Older builds'
/// functions are unchanged and notify too.
const V3: &str = r#"
CREATE FUNCTION @S.notify_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('dream_' || md5(TG_TABLE_SCHEMA), '');
  RETURN NULL;
END
$fn$;
CREATE TRIGGER notify_change AFTER INSERT OR UPDATE OR DELETE ON @S.records
  FOR EACH STATEMENT EXECUTE FUNCTION @S.notify_change();
"#;

/// The name of a schema's notice channel (`$1`: the schema), as the trigger
/// computes it: NOTIFY channels are database-wide, so each schema has its own.
pub(crate) const CHANNEL_SQL: &str = "SELECT 'dream_' || md5($1::text)";

/// Every migration, in order.
const MIGRATIONS: &[&str] = &[V1, V2, V3];

/// `"schema"`, quoted. The name was validated (`[a-z_][a-z0-9_]*`).
pub(crate) fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}

fn expand(sql: &str, schema: &str) -> String {
    sql.replace("@EPOCH_CHECK", EPOCH_CHECK)
        .replace("@FENCE_CHECK", FENCE_CHECK)
        .replace("@S", &quoted(schema))
}

/// The SQL taking the schema from `from` to [`SCHEMA_VERSION`].
pub(crate) fn migrations_from(from: i32, schema: &str) -> Vec<String> {
    let from = usize::try_from(from).unwrap_or(0);
    MIGRATIONS
        .iter()
        .skip(from)
        .map(|sql| expand(sql, schema))
        .collect()
}

/// The statements the store runs, with the schema filled in.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    pub(crate) get: String,
    pub(crate) put: String,
    pub(crate) delete: String,
    pub(crate) list: String,
    pub(crate) namespaces: String,
    pub(crate) acquire: String,
    pub(crate) renew: String,
    pub(crate) release: String,
    pub(crate) record_of: String,
    pub(crate) lease_of: String,
    pub(crate) write_batch: String,
    pub(crate) batch_of: String,
    pub(crate) list_versions: String,
}

impl Sql {
    pub(crate) fn new(schema: &str) -> Sql {
        let s = quoted(schema);
        Sql {
            get: format!(
                "SELECT m.epoch, r.version, r.value FROM {s}.meta m \
                 LEFT JOIN {s}.records r ON r.namespace = $1 AND r.id = $2"
            ),
            put: format!(
                "SELECT o_status, o_version FROM {s}.put($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            ),
            delete: format!(
                "SELECT o_status, o_version, o_deleted FROM {s}.del($1, $2, $3, $4, $5, $6, $7)"
            ),
            list: format!(
                "SELECT m.epoch, r.id, r.version, r.value FROM {s}.meta m \
                 LEFT JOIN LATERAL (SELECT id, version, value FROM {s}.records \
                   WHERE namespace = $1 AND id > $2 ORDER BY id LIMIT $3) r ON true \
                 ORDER BY r.id"
            ),
            // A loose index scan: one probe of the primary key per namespace.
            namespaces: format!(
                "WITH RECURSIVE ns(namespace) AS ( \
                   (SELECT namespace FROM {s}.records ORDER BY namespace LIMIT 1) \
                   UNION ALL \
                   SELECT (SELECT r.namespace FROM {s}.records r WHERE r.namespace > ns.namespace \
                           ORDER BY r.namespace LIMIT 1) FROM ns WHERE ns.namespace IS NOT NULL) \
                 SELECT m.epoch, n.namespace FROM {s}.meta m \
                 LEFT JOIN (SELECT namespace FROM ns WHERE namespace IS NOT NULL) n ON true"
            ),
            acquire: format!("SELECT o_status, o_token FROM {s}.acquire($1, $2, $3, $4)"),
            renew: format!("SELECT o_status, o_ok FROM {s}.renew($1, $2, $3, $4, $5)"),
            release: format!("SELECT o_status, o_ok FROM {s}.release($1, $2, $3, $4)"),
            record_of: format!(
                "SELECT version, write_id FROM {s}.records WHERE namespace = $1 AND id = $2"
            ),
            lease_of: format!(
                "SELECT fence, holder, released, expires_at > clock_timestamp() \
                 FROM {s}.leases WHERE lock = $1"
            ),
            write_batch: format!(
                "SELECT o_status, o_index, o_version, o_outcomes \
                 FROM {s}.write_batch($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            ),
            batch_of: format!("SELECT outcomes FROM {s}.batches WHERE write_id = $1"),
            list_versions: format!(
                "SELECT m.epoch, r.id, r.version FROM {s}.meta m \
                 LEFT JOIN LATERAL (SELECT id, version FROM {s}.records \
                   WHERE namespace = $1 AND id > $2 ORDER BY id LIMIT $3) r ON true \
                 ORDER BY r.id"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_expanded() {
        for sql in migrations_from(0, "team_x") {
            assert!(!sql.contains('@'), "{sql}");
            assert!(sql.contains("\"team_x\".records"));
        }
        assert_eq!(migrations_from(SCHEMA_VERSION, "s").len(), 0);
        assert_eq!(MIGRATIONS.len(), SCHEMA_VERSION as usize);
    }
}
