"""The Lua scripts of the leader leases and of fencing (see the state machine in
:mod:`services.common.store.base`); the key layout is in :mod:`services.common.store._lua`.
:data:`FENCE` is the prologue every fenced script starts with (the guard of every
guarded one calls its ``fenced()``)."""

from __future__ import annotations

FENCED = "KSCHED_FENCED"
"""The first word of the error a guard raises when the client's fence is not its role's
current term: ``KSCHED_FENCED role token current``."""

FENCE = """
local P = ARGV[1]

-- The caller's fence (ARGV[2] = expected|role|token): refused when the role's lease
-- has another token (none recorded: the store lost it, and its holder writes it back).
local function fenced()
  local role, token = string.match(ARGV[2], '^[^|]*|([^|]*)|([^|]*)$')
  if role and role ~= '' then
    local current = redis.call('HGET', P .. 'leader:' .. role, 'token')
    if current and current ~= token then
      error({err = 'KSCHED_FENCED ' .. role .. ' ' .. token .. ' ' .. current})
    end
  end
end
"""

PUT_QUEUE_VIEW = (
    FENCE
    + """
-- ARGV: P, ''|role|token, view. Fenced, not guarded by the epoch.
fenced()
redis.call('SET', P .. 'queueview', ARGV[3])
return 0
"""
)

_LEADER = """
local key = ARGV[1] .. 'leader:' .. ARGV[2]
local FIELDS = {'holder', 'token', 'duration', 'acquired', 'renewed', 'transitions', 'host',
                'pid'}

local function lease()
  return redis.call('HMGET', key, unpack(FIELDS))
end
"""

ACQUIRE_LEASE = (
    _LEADER
    + """
-- ARGV: P, name, holder, duration, now, token ('0': a new term), the first term's token
-- (base.first_token of now), host, pid. Unguarded.
-- Returns {1 (held by holder now) or 0, holder, token, duration, acquired, renewed,
-- transitions, host, pid} (base.ClusterStore.acquire_lease).
local holder, duration, now, token = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local cur = lease()
local function answer(granted)
  local out = lease()
  table.insert(out, 1, granted)
  return out
end
if not cur[2] then
  -- Never held, or the store lost it: a renewal writes it back with its token.
  if token == '0' then token = ARGV[7] end
  redis.call('HSET', key, 'holder', holder, 'token', token, 'duration', duration,
             'acquired', now, 'renewed', now, 'transitions', '0', 'host', ARGV[8],
             'pid', ARGV[9])
  redis.call('SADD', ARGV[1] .. 'leaders', ARGV[2])
  return answer(1)
end
if token ~= '0' then
  if cur[1] ~= holder or cur[2] ~= token then return answer(0) end
  redis.call('HSET', key, 'duration', duration, 'renewed', now)
  return answer(1)
end
local expired = cur[1] == '' or tonumber(cur[5]) + tonumber(cur[3]) <= tonumber(now)
if cur[1] ~= holder and not expired then return answer(0) end
local transitions = tonumber(cur[6])
if cur[1] ~= holder then transitions = transitions + 1 end
-- The next term's token: one more, or the clock's if that is higher, so that a term
-- whose write a failover lost (a replica promoted before it had it) is never reissued.
local next_token = math.max(tonumber(cur[2]) + 1, tonumber(ARGV[7]))
redis.call('HSET', key, 'holder', holder, 'token', string.format('%d', next_token),
           'duration', duration, 'acquired', now, 'renewed', now,
           'transitions', tostring(transitions), 'host', ARGV[8], 'pid', ARGV[9])
return answer(1)
"""
)

RELEASE_LEASE = (
    _LEADER
    + """
-- ARGV: P, name, holder, token, now. Unguarded. Empties the holder if it is still
-- holder's term token (the token stays). Returns 1 if released.
local cur = lease()
if cur[1] ~= ARGV[3] or cur[2] ~= ARGV[4] then return 0 end
redis.call('HSET', key, 'holder', '', 'renewed', ARGV[5])
return 1
"""
)

READ_LEADERS = """
-- ARGV: P. Unguarded. Returns a flat list: name, {holder, token, duration, acquired,
-- renewed, transitions, host, pid}, ... for every leader lease.
local P = ARGV[1]
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', P .. 'leaders')) do
  local fields = redis.call('HMGET', P .. 'leader:' .. name, 'holder', 'token', 'duration',
                            'acquired', 'renewed', 'transitions', 'host', 'pid')
  if fields[2] then
    table.insert(out, name)
    table.insert(out, fields)
  end
end
return out
"""
