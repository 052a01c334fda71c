//! One Lua script per operation. `redis::Script` sends `EVALSHA` and, when the
//! server answers `NOSCRIPT` (after `SCRIPT FLUSH` or a restart), loads the
//! script and retries, so a flushed script cache is recovered transparently.
//!
//! Every script except `open` starts by checking the store's epoch (KEYS[1]
//! against ARGV[1]) and answers with an array whose first element is a status.
//! A script that wrote publishes an empty message on the channel
//! `Keys::changes` (the epoch key followed by `:changes`), so readers waiting
//! for changes wake early
//! ([`watch_changes`](dream_core::RecordStore::watch_changes)). Statuses:

use std::sync::LazyLock;

use redis::Script;

/// Success; the payload follows.
pub(crate) const OK: i64 = 0;
/// The precondition failed; the current version (if any) follows.
pub(crate) const CONFLICT: i64 = 1;
/// The fence is not the lock's newest.
pub(crate) const LOCK_LOST: i64 = 2;
/// The epoch key is missing: Redis lost this store's data.
pub(crate) const EPOCH_MISSING: i64 = 3;
/// The epoch key holds another epoch: the store was re-created.
pub(crate) const EPOCH_CHANGED: i64 = 4;
/// (`open` only) no store exists and creating one was not allowed.
pub(crate) const NO_STORE: i64 = 5;

/// The epoch check every script starts with.
const PROLOGUE: &str = r#"
local epoch = redis.call('GET', KEYS[1])
if epoch ~= ARGV[1] then
  if epoch then return {4} else return {3} end
end
"#;

/// The fence check of put and delete: the fence key and token are the last KEY
/// and ARGV when present.
const FENCE_CHECK: &str = r#"
if #KEYS == FENCE_KEY then
  if redis.call('GET', KEYS[FENCE_KEY]) ~= ARGV[FENCE_ARG] then return {2} end
end
"#;

/// The precondition check of put and delete on the record KEYS[RECORD_KEY];
/// ARGV[2] is `any`, `absent` or `matches`, ARGV[3] the expected version.
const PRECONDITION: &str = r#"
local cur = redis.call('HGET', KEYS[RECORD_KEY], 'n')
if ARGV[2] == 'absent' and cur then return {1, cur} end
if ARGV[2] == 'matches' and cur ~= ARGV[3] then return {1, cur} end
"#;

/// Opens (and, if allowed, creates) the store.
/// KEYS: epoch, version counter, namespaces. ARGV: new epoch, create (`1`/`0`).
/// Answers {0, epoch}, {3} (data without an epoch) or {5}.
const OPEN: &str = r#"
local epoch = redis.call('GET', KEYS[1])
if epoch then return {0, epoch} end
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  return {3}
end
if ARGV[2] ~= '1' then return {5} end
redis.call('SET', KEYS[1], ARGV[1])
return {0, ARGV[1]}
"#;

/// KEYS: epoch, record. ARGV: epoch. Answers {0} (absent) or {0, version, value}.
const GET: &str = r#"
local r = redis.call('HMGET', KEYS[2], 'n', 'v')
if not r[1] and not r[2] then return {0} end
return {0, r[1] or '', r[2]}
"#;

/// KEYS: epoch, version counter, namespaces, index, record, [fence].
/// ARGV: epoch, pre, expected version, value, namespace, id, [token].
/// Answers {0, version}, {1, current?} or {2}.
const PUT: &str = r#"
local v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[5], 'n', v, 'v', ARGV[4])
if not cur then
  -- A new record: index it. A present one is already indexed and its
  -- namespace listed (every write keeps that invariant).
  redis.call('ZADD', KEYS[4], 0, ARGV[6])
  redis.call('SADD', KEYS[3], ARGV[5])
end
redis.call('PUBLISH', KEYS[1] .. ':changes', '')
return {0, v}
"#;

/// KEYS: epoch, namespaces, index, record, [fence].
/// ARGV: epoch, pre, expected version, namespace, id, [token].
/// Answers {0, 1|0}, {1, current?} or {2}.
const DELETE: &str = r#"
if not cur then return {0, 0} end
redis.call('DEL', KEYS[4])
redis.call('ZREM', KEYS[3], ARGV[5])
if redis.call('ZCARD', KEYS[3]) == 0 then redis.call('SREM', KEYS[2], ARGV[4]) end
redis.call('PUBLISH', KEYS[1] .. ':changes', '')
return {0, 1}
"#;

/// KEYS: epoch, index. ARGV: epoch, range start (`-` or `(id`), count, record key prefix.
/// Answers {0, id, version, value, id, version, value, ...}. Record keys are
/// derived from the index inside the script; they share the hash tag, so they
/// live in the same slot.
const LIST: &str = r#"
local ids = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {0}
for _, id in ipairs(ids) do
  local r = redis.call('HMGET', ARGV[4] .. id, 'n', 'v')
  out[#out + 1] = id
  out[#out + 1] = r[1] or ''
  out[#out + 1] = r[2] or ''
end
return out
"#;

/// KEYS: epoch, index. ARGV: epoch, range start (`-` or `(id`), count, record key prefix.
/// Answers {0, id, version, id, version, ...}: `list` without the values.
const LIST_VERSIONS: &str = r#"
local ids = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[2], '+', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {0}
for _, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', ARGV[4] .. id, 'n') or ''
end
return out
"#;

/// A batch, all or nothing: the fence, every precondition, then every write.
/// KEYS: epoch, version counter, namespaces, fence (or the epoch again when
/// unfenced), then per operation its index and its record.
/// ARGV: epoch, fenced (`1`/`0`), token, operation count, then per operation
/// kind (`put`/`del`), pre, expected version, value (empty for `del`), namespace, id.
/// Answers {0, outcome...} (a put's version; 1/0 for a delete),
/// {1, index of the failing operation, current?} or {2}.
const BATCH: &str = r#"
if ARGV[2] == '1' and redis.call('GET', KEYS[4]) ~= ARGV[3] then return {2} end
local n = tonumber(ARGV[4])
local cur = {}
for i = 0, n - 1 do
  local a = 5 + 6 * i
  local c = redis.call('HGET', KEYS[6 + 2 * i], 'n')
  if ARGV[a + 1] == 'absent' and c then return {1, i, c} end
  if ARGV[a + 1] == 'matches' and c ~= ARGV[a + 2] then return {1, i, c} end
  cur[i + 1] = c
end
local out = {0}
for i = 0, n - 1 do
  local a = 5 + 6 * i
  local idx, rec = KEYS[5 + 2 * i], KEYS[6 + 2 * i]
  if ARGV[a] == 'put' then
    local v = redis.call('INCR', KEYS[2])
    redis.call('HSET', rec, 'n', v, 'v', ARGV[a + 3])
    if not cur[i + 1] then
      redis.call('ZADD', idx, 0, ARGV[a + 5])
      redis.call('SADD', KEYS[3], ARGV[a + 4])
    end
    out[#out + 1] = v
  elseif cur[i + 1] then
    redis.call('DEL', rec)
    redis.call('ZREM', idx, ARGV[a + 5])
    if redis.call('ZCARD', idx) == 0 then redis.call('SREM', KEYS[3], ARGV[a + 4]) end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
redis.call('PUBLISH', KEYS[1] .. ':changes', '')
return out
"#;

/// KEYS: epoch, namespaces. ARGV: epoch. Answers {0, namespace...}.
const NAMESPACES: &str = r#"
local out = {0}
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[2])) do out[#out + 1] = ns end
return out
"#;

/// KEYS: epoch, lease, fence. ARGV: epoch, holder, ttl ms.
/// `SET NX PX` of the random holder, then `INCR` of the fence counter.
/// Answers {0, token} or {0} when the lock is held.
const ACQUIRE: &str = r#"
if not redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {0} end
return {0, redis.call('INCR', KEYS[3])}
"#;

/// KEYS: epoch, lease, fence. ARGV: epoch, holder, ttl ms, token.
/// Compare-and-`PEXPIRE`: extends only while this holder has the lease and its
/// token is still the lock's newest fence.
/// Answers {0, 1} when extended, {0, 0} when the lease was lost.
const RENEW: &str = r#"
if redis.call('GET', KEYS[2]) ~= ARGV[2] or redis.call('GET', KEYS[3]) ~= ARGV[4] then
  return {0, 0}
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {0, 1}
"#;

/// KEYS: epoch, lease. ARGV: epoch, holder.
/// Compare-and-`DEL`. Answers {0, 1} when released, {0, 0} when the lease had
/// been lost (expired, or taken by another holder).
const RELEASE: &str = r#"
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return {0, 0} end
redis.call('DEL', KEYS[2])
return {0, 1}
"#;

/// KEYS: epoch. ARGV: epoch. Deletes the epoch (the rest is deleted by SCAN).
const DESTROY: &str = r#"
redis.call('DEL', KEYS[1])
return {0}
"#;

/// The compiled scripts (their SHA1s are computed once).
pub(crate) struct Scripts {
    pub(crate) open: Script,
    pub(crate) get: Script,
    pub(crate) put: Script,
    pub(crate) delete: Script,
    pub(crate) list: Script,
    pub(crate) list_versions: Script,
    pub(crate) batch: Script,
    pub(crate) namespaces: Script,
    pub(crate) acquire: Script,
    pub(crate) renew: Script,
    pub(crate) release: Script,
    pub(crate) destroy: Script,
}

fn guarded(body: &str) -> Script {
    Script::new(&format!("{PROLOGUE}{body}"))
}

/// The body of a write script: fence check, precondition, then `body`.
fn write_body(record_key: usize, fence_key: usize, fence_arg: usize, body: &str) -> String {
    let fence = FENCE_CHECK
        .replace("FENCE_KEY", &fence_key.to_string())
        .replace("FENCE_ARG", &fence_arg.to_string());
    let pre = PRECONDITION.replace("RECORD_KEY", &record_key.to_string());
    format!("{fence}{pre}{body}")
}

pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    open: Script::new(OPEN),
    get: guarded(GET),
    put: guarded(&write_body(5, 6, 7, PUT)),
    delete: guarded(&write_body(4, 5, 6, DELETE)),
    list: guarded(LIST),
    list_versions: guarded(LIST_VERSIONS),
    batch: guarded(BATCH),
    namespaces: guarded(NAMESPACES),
    acquire: guarded(ACQUIRE),
    renew: guarded(RENEW),
    release: guarded(RELEASE),
    destroy: guarded(DESTROY),
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_scripts_have_every_placeholder_substituted() {
        for body in [write_body(5, 6, 7, PUT), write_body(4, 5, 6, DELETE)] {
            assert!(!body.contains("FENCE_"), "{body}");
            assert!(!body.contains("RECORD_KEY"), "{body}");
        }
        assert!(write_body(5, 6, 7, PUT).contains("if #KEYS == 6 then"));
        assert!(write_body(4, 5, 6, DELETE).contains("ARGV[6]"));
    }
}
