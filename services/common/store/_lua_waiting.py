"""The Lua scripts behind RedisStore's waiting pods (Permit): each call is one atomic
step on the server. As every script of :mod:`services.common.store._lua`, each takes the
key prefix (``{namespace}:``) as ARGV[1]; these are unguarded (see base.ClusterStore)
but for ``RELEASE_WAITING``, which gives reservations back and counts in ``releases``
(the release version).
"""

from __future__ import annotations

from services.common.store._lua import _HELPERS

# -- waiting pods (Permit) --------------------------------------------------------------
# Unguarded (see base.ClusterStore). Layout:
# - ``wait:rec``: hash uid → the record as put (JSON; its pending/state fields are stale).
# - ``wait:att``: hash uid → attempt.
# - ``wait:st``: hash uid → ``state|resolved_at|plugin|message``.
# - ``wait:pend:{uid}``: hash plugin → deadline (a decimal string, compared as a number).
# - ``wait:due``: zset of waiting uids by their earliest pending deadline.
# - ``wait:done``: zset of resolved uids by resolved_at.
_WAITING = """
local P = ARGV[1]

local function wait_record(uid)
  local rec = redis.call('HGET', P .. 'wait:rec', uid)
  if not rec then return false end
  return {rec, redis.call('HGET', P .. 'wait:st', uid),
          redis.call('HGETALL', P .. 'wait:pend:' .. uid)}
end

local function wait_state(uid)
  local st = redis.call('HGET', P .. 'wait:st', uid)
  if not st then return false end
  return string.match(st, '^([^|]*)|')
end

local function wait_resolve(uid, state, now, plugin, message)
  redis.call('HSET', P .. 'wait:st', uid, state .. '|' .. now .. '|' .. plugin .. '|' .. message)
  redis.call('ZREM', P .. 'wait:due', uid)
  redis.call('ZADD', P .. 'wait:done', now, uid)
end

local function wait_due(uid)
  local flat = redis.call('HGETALL', P .. 'wait:pend:' .. uid)
  local first, name = nil, nil
  for j = 1, #flat, 2 do
    local d = tonumber(flat[j + 1])
    if first == nil or d < first or (d == first and flat[j] < name) then
      first, name = d, flat[j]
    end
  end
  return first, name
end

local function wait_drop(uid)
  redis.call('HDEL', P .. 'wait:rec', uid)
  redis.call('HDEL', P .. 'wait:att', uid)
  redis.call('HDEL', P .. 'wait:st', uid)
  redis.call('DEL', P .. 'wait:pend:' .. uid)
  redis.call('ZREM', P .. 'wait:due', uid)
  redis.call('ZREM', P .. 'wait:done', uid)
end
"""

PUT_WAITING = (
    _WAITING
    + """
-- ARGV: P, count, then per record: uid, attempt, json, npending, (plugin, deadline)*.
local i = 3
for _ = 1, tonumber(ARGV[2]) do
  local uid, attempt, rec, n = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local old = redis.call('HGET', P .. 'wait:att', uid)
  if not old or tonumber(old) <= tonumber(attempt) then
    wait_drop(uid)
    redis.call('HSET', P .. 'wait:rec', uid, rec)
    redis.call('HSET', P .. 'wait:att', uid, attempt)
    redis.call('HSET', P .. 'wait:st', uid, 'waiting|0||')
    for j = 0, n - 1 do
      redis.call('HSET', P .. 'wait:pend:' .. uid, ARGV[i + 4 + 2 * j], ARGV[i + 5 + 2 * j])
    end
    local first = wait_due(uid)
    if first ~= nil then
      redis.call('ZADD', P .. 'wait:due', first, uid)
    end
  end
  i = i + 4 + 2 * n
end
return 0
"""
)

ALLOW_WAITING = (
    _WAITING
    + """
-- ARGV: P, uid, plugin, now. Returns the record after, or false if it does not wait.
local uid, plugin, now = ARGV[2], ARGV[3], ARGV[4]
if wait_state(uid) ~= 'waiting' then return false end
if redis.call('HDEL', P .. 'wait:pend:' .. uid, plugin) == 1 then
  local first = wait_due(uid)
  if first == nil then
    wait_resolve(uid, 'allowed', now, '', '')
  else
    redis.call('ZADD', P .. 'wait:due', first, uid)
  end
end
return wait_record(uid)
"""
)

REJECT_WAITING = (
    _WAITING
    + """
-- ARGV: P, uid, plugin, message, now. Returns the record after, or false.
local uid = ARGV[2]
if wait_state(uid) ~= 'waiting' then return false end
wait_resolve(uid, 'rejected', ARGV[5], ARGV[3], ARGV[4])
return wait_record(uid)
"""
)

EXPIRE_WAITING = (
    _WAITING
    + """
-- ARGV: P, now. Rejects every waiting pod whose earliest deadline is <= now.
local now = ARGV[2]
local out = {}
for _, uid in ipairs(redis.call('ZRANGEBYSCORE', P .. 'wait:due', '-inf', now)) do
  local first, name = wait_due(uid)
  if wait_state(uid) == 'waiting' and first ~= nil and first <= tonumber(now) then
    wait_resolve(uid, 'rejected', now, name, '')
    out[#out + 1] = wait_record(uid)
  else
    redis.call('ZREM', P .. 'wait:due', uid)
  end
end
return out
"""
)

TAKE_WAITING = (
    _WAITING
    + """
-- ARGV: P, uid, attempt. A resolved record is removed and returned; a waiting one is
-- returned and stays; false when there is none for that attempt.
local uid, attempt = ARGV[2], ARGV[3]
local att = redis.call('HGET', P .. 'wait:att', uid)
if not att or att ~= attempt then return false end
local record = wait_record(uid)
if wait_state(uid) ~= 'waiting' then wait_drop(uid) end
return record
"""
)

RETURN_WAITING = (
    _WAITING
    + """
-- ARGV: P, count, then per record: uid, attempt, json, status line. A record comes back
-- resolved (no pending plugins) unless the uid has one of that or a later attempt.
local i = 3
for _ = 1, tonumber(ARGV[2]) do
  local uid, attempt, rec, st = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local old = redis.call('HGET', P .. 'wait:att', uid)
  if not old or tonumber(old) < tonumber(attempt) then
    wait_drop(uid)
    redis.call('HSET', P .. 'wait:rec', uid, rec)
    redis.call('HSET', P .. 'wait:att', uid, attempt)
    redis.call('HSET', P .. 'wait:st', uid, st)
    redis.call('ZADD', P .. 'wait:done', string.match(st, '^[^|]*|([^|]*)|'), uid)
  end
  i = i + 4
end
return 0
"""
)

READ_WAITING = (
    _WAITING
    + """
-- ARGV: P, 'all' | 'done' (with ARGV[3] = when). Returns the records.
local uids
if ARGV[2] == 'all' then
  uids = redis.call('HKEYS', P .. 'wait:rec')
else
  uids = redis.call('ZRANGEBYSCORE', P .. 'wait:done', '-inf', ARGV[3])
end
local out = {}
for _, uid in ipairs(uids) do
  local record = wait_record(uid)
  if record then out[#out + 1] = record end
end
return out
"""
)

RELEASE_WAITING = (
    _HELPERS
    + _WAITING
    + """
-- ARGV: P, expected, seen, now, count, then per pod: uid, plugin, message. False when
-- the release version is not seen; else rejects those waiting at Permit, releases
-- their reservations (when still the record's node and attempt), raises the version
-- when one was, and returns the records rejected.
guard()
if tonumber(redis.call('HGET', P .. 'releases', 'version') or '0') ~= tonumber(ARGV[3]) then
  return false
end
local out = {}
local i = 6
for _ = 1, tonumber(ARGV[5]) do
  local uid, plugin, message = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  if wait_state(uid) == 'waiting' then
    local rec = cjson.decode(redis.call('HGET', P .. 'wait:rec', uid))
    if rec.point == 'Permit' then
      wait_resolve(uid, 'rejected', ARGV[4], plugin, message)
      out[#out + 1] = wait_record(uid)
      local v = redis.call('HGET', P .. 'assumed', uid)
      if v then
        local anode, aattempt = parse_assumed(v)
        if anode == rec.node and aattempt == redis.call('HGET', P .. 'wait:att', uid) then
          release(uid)
        end
      end
    end
  end
end
if #out > 0 then redis.call('HINCRBY', P .. 'releases', 'version', 1) end
return out
"""
)
