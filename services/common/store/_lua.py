"""The Lua scripts behind RedisStore: each call is one atomic step on the server.

Every script takes the key prefix (``{namespace}:``) as ARGV[1] and builds its key names
from it (standalone Redis; the keys are not declared in KEYS), and as ARGV[2] the live
token the client expects ('' for none), its fence's role and its fencing token
(``expected|role|token``; ``||`` for none): ``guard()`` raises ``KSCHED_FENCED …`` when
the role's leader lease has another token, then ``KSCHED_STORE_LOST …`` when the marker
is not what the client may use, before anything is read or written (the state machines
are in :mod:`services.common.store.base`). Layout:

- ``epoch``: the marker: absent (Blank), ``building``, or ``live:{token}``.

- ``seq``: last applied log seq.       ``obj:{kind}``: hash key → JSON.
- ``nodes``: set of nodes in the log.  ``alloc:{node}``: hash resource → allocatable.
- ``usage:{node}``: hash resource → bound + assumed + binding (zero fields deleted).
- ``used``: set of nodes that have a ``usage:{node}`` hash.
- ``charge``: hash uid → ``node|res=amt,...`` for bound pods.
- ``assumed``: hash uid → ``node|attempt|deadline|res=amt,...``; deadline ``inf`` = binding.
- ``assumed:{node}``: uids assumed, not yet binding, on the node (the expiry sweep).
- ``lease``: hash uid → attempt.       ``nominated``: hash uid → ``node|priority``.
- ``domains``: hash placement domain → version (scheduler.domains).
- ``antikeys``: set of the topology keys of the placed pods' required anti-affinity.
- ``devices``: hash DRA device → holder, ``pod:{uid}`` or ``claim:{ns/name}``.
- ``devpod``: hash uid → the devices (newline-separated) its reservation asked for;
  the pod holds those ``devices`` still names it for.
- ``devclaim``: hash claim key → the devices (newline-separated) its allocation holds.
- ``wait:*``: the pods waiting at Permit (see :mod:`services.common.store._lua_waiting`).
  ``releases``: hash, ``version`` → how many ``release_waiting`` calls gave room back.
- ``evicting``: hash uid → ``namespace/name`` of pods being evicted (the descheduler).
- ``preempting``: hash preemptor uid → ``since|victim,victim,...`` (the queue's preemptions
  in flight).
- ``queueview``: the queue's published view (JSON).
- ``leader:{name}``: a role's leader lease, a hash: ``holder``, ``token``, ``duration``,
  ``acquired``, ``renewed``, ``transitions``, ``host``, ``pid`` (base.LeaderLease; times
  as the caller's clock wrote them). Unguarded by the epoch. ``leaders``: their names.

Amounts stay strings end to end (HINCRBY is int64; Lua numbers are doubles, used only
for comparisons, exact below 2^53). Python writes requests in resource-name order, so
conflict reasons come out in the same order as the in-memory store's.
"""

from __future__ import annotations

from services.common.store._lua_leases import FENCE as _FENCE

LOST = "KSCHED_STORE_LOST"
"""The first word of the error a guard raises when the epoch is not the expected one."""
_GUARD = (
    _FENCE
    + """
local function lost(why)
  error({err = 'KSCHED_STORE_LOST ' .. why})
end

local function guard()
  fenced()
  local marker = redis.call('GET', P .. 'epoch')
  local expected = string.match(ARGV[2], '^([^|]*)')
  if expected ~= '' then
    if marker ~= 'live:' .. expected then
      local found = 'blank'
      if marker then found = string.match(marker, '^[^:]*') end
      lost('lost its projection: expected epoch ' .. expected .. ', found ' .. found)
    end
  elseif marker == 'building' then
    lost('is being rebuilt from the event log')
  end
  return marker
end
"""
)

_HELPERS = (
    _GUARD
    + """
local function parse_assumed(v)
  return string.match(v, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
end

local function incr(node, reqs, sign)
  local key = P .. 'usage:' .. node
  for name, amt in string.gmatch(reqs, '([^,=]+)=([^,]+)') do
    if sign < 0 then amt = '-' .. amt end
    if redis.call('HINCRBY', key, name, amt) == 0 then redis.call('HDEL', key, name) end
  end
  if redis.call('EXISTS', key) == 1 then
    redis.call('SADD', P .. 'used', node)
  else
    redis.call('SREM', P .. 'used', node)
  end
end

local function unhold(uid)
  local v = redis.call('HGET', P .. 'devpod', uid)
  if not v then return end
  local mine = 'pod:' .. uid
  for d in string.gmatch(v, '[^\\n]+') do
    if redis.call('HGET', P .. 'devices', d) == mine then redis.call('HDEL', P .. 'devices', d) end
  end
  redis.call('HDEL', P .. 'devpod', uid)
end

-- The pod's assumption, and the devices it holds unless keep_devices (bound).
local function release(uid, keep_devices)
  if not keep_devices then unhold(uid) end
  local v = redis.call('HGET', P .. 'assumed', uid)
  if not v then return end
  local node, _, _, reqs = parse_assumed(v)
  incr(node, reqs, -1)
  redis.call('HDEL', P .. 'assumed', uid)
  redis.call('SREM', P .. 'assumed:' .. node, uid)
end
"""
)

APPLY = (
    _HELPERS
    + """
-- ARGV: P, expected, op, token, count, then per entry:
--   seq, kind, key, deleted, body, mode, uid, node, reqs, devs
-- and for a restore from a snapshot its base seq last (a Blank store at seq 0 only).
-- op 'apply': guarded; on a Blank store the first entries make it live:{token}.
-- op 'restore' / 'final': a Blank or Building store only; Building after, live:{token}
-- after 'final'. Returns the token when the store became live, else ''.
-- mode 'n': node (reqs = allocatable); 'p': pod charge; 'c': a claim holding devs
-- (newline-separated; none when deallocated or deleted); '': object only.
local op, token, count = ARGV[3], ARGV[4], tonumber(ARGV[5])
local marker
if op == 'apply' then
  marker = guard()
else
  fenced()
  marker = redis.call('GET', P .. 'epoch')
  if marker and marker ~= 'building' then lost('is live: nothing to restore') end
end
local applied = tonumber(redis.call('GET', P .. 'seq') or '0')
local base = nil
if op ~= 'apply' then base = ARGV[6 + 10 * count] end
if base then
  if marker or applied ~= 0 then lost('is not blank: no snapshot on it') end
  applied = tonumber(base)
end
for k = 0, count - 1 do
  local seq = tonumber(ARGV[6 + 10 * k])
  if seq > applied then
    if seq ~= applied + 1 then
      lost('is at seq ' .. applied .. ': applying seq ' .. seq ..
        ' would leave a gap (the store lost entries)')
    end
    break
  end
end
if op ~= 'apply' then redis.call('SET', P .. 'epoch', 'building') end
local last = false
local i = 6
for _ = 1, count do
  local seq, kind, key, deleted, body = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local mode, uid, node, reqs = ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8]
  local devs = ARGV[i + 9]
  i = i + 10
  if tonumber(seq) > applied then
    applied = tonumber(seq)
    last = seq
    if deleted == '1' then
      redis.call('HDEL', P .. 'obj:' .. kind, key)
    else
      redis.call('HSET', P .. 'obj:' .. kind, key, body)
    end
    if mode == 'n' then
      redis.call('DEL', P .. 'alloc:' .. key)
      if deleted == '1' then
        redis.call('SREM', P .. 'nodes', key)
      else
        redis.call('SADD', P .. 'nodes', key)
        for name, amt in string.gmatch(reqs, '([^,=]+)=([^,]+)') do
          redis.call('HSET', P .. 'alloc:' .. key, name, amt)
        end
      end
    elseif mode == 'p' then
      local old = redis.call('HGET', P .. 'charge', uid)
      if old then
        local onode, oreqs = string.match(old, '^([^|]*)|(.*)$')
        incr(onode, oreqs, -1)
        redis.call('HDEL', P .. 'charge', uid)
      end
      if node ~= '' or deleted == '1' then
        release(uid, deleted ~= '1')  -- bound: its devices held until its claims are
        redis.call('HDEL', P .. 'lease', uid)
        redis.call('HDEL', P .. 'nominated', uid)
      end
      if deleted == '1' then
        redis.call('HDEL', P .. 'evicting', uid)
        local st = redis.call('HGET', P .. 'wait:st', uid)
        if st and string.match(st, '^waiting|') then
          redis.call('HSET', P .. 'wait:st', uid, 'rejected|0||removed')
          redis.call('ZREM', P .. 'wait:due', uid)
          redis.call('ZADD', P .. 'wait:done', 0, uid)
        end
      end
      if node ~= '' and deleted ~= '1' then
        redis.call('HSET', P .. 'charge', uid, node .. '|' .. reqs)
        incr(node, reqs, 1)
      end
    elseif mode == 'c' then
      local holder = 'claim:' .. key
      local old = redis.call('HGET', P .. 'devclaim', key)
      if old then
        for d in string.gmatch(old, '[^\\n]+') do
          if redis.call('HGET', P .. 'devices', d) == holder then
            redis.call('HDEL', P .. 'devices', d)
          end
        end
        redis.call('HDEL', P .. 'devclaim', key)
      end
      if deleted ~= '1' and devs ~= '' then
        for d in string.gmatch(devs, '[^\\n]+') do redis.call('HSET', P .. 'devices', d, holder) end
        redis.call('HSET', P .. 'devclaim', key, devs)
      end
    end
  end
end
if last then
  redis.call('SET', P .. 'seq', last)
elseif base then
  redis.call('SET', P .. 'seq', base)
end
if op == 'final' or (op == 'apply' and not marker and last) then
  redis.call('SET', P .. 'epoch', 'live:' .. token)
  return token
end
return ''
"""
)

ASSUME = (
    _HELPERS
    + """
-- ARGV: P, expected, now, count, then per reservation:
--   uid, node, attempt, deadline, reqs, checked, reads, touches, watched, keys, devices
-- (checked: '*' for every resource, else the comma-separated resources to check;
-- reads: newline-separated domain, version pairs; touches: newline-separated domains;
-- watched: '*' for unchecked, else the newline-separated anti-affinity topology keys
-- the decision knew of; keys: the pod's own, newline-separated; devices: the DRA
-- devices it takes, newline-separated, once each).
-- Returns per reservation {status, reason, usage as a flat field/value list,
-- versions of the reads as a flat list on a conflict of the reads, anti-affinity
-- keys placed that the decision did not know of, devices others hold (the reason is
-- then empty: Python words it)}.
guard()
local now = tonumber(ARGV[3])
local swept = {}

local function tomap(flat)
  local m = {}
  for j = 1, #flat, 2 do m[flat[j]] = tonumber(flat[j + 1]) end
  return m
end

local function sweep(node)
  local set = P .. 'assumed:' .. node
  for _, uid in ipairs(redis.call('SMEMBERS', set)) do
    local v = redis.call('HGET', P .. 'assumed', uid)
    local anode, deadline
    if v then anode, _, deadline = parse_assumed(v) end
    if anode ~= node then
      redis.call('SREM', set, uid)
    elseif deadline ~= 'inf' and tonumber(deadline) < now then
      release(uid)
    end
  end
end

local function checks(checked, name)
  return checked == '*' or string.find(',' .. checked .. ',', ',' .. name .. ',', 1, true) ~= nil
end

local function touch(touches)
  for d in string.gmatch(touches, '[^\\n]+') do
    redis.call('HINCRBY', P .. 'domains', d, 1)
  end
end

local function current(reads)
  local flat = {}
  for d in string.gmatch(reads, '([^\\n]+)\\n[^\\n]+') do
    table.insert(flat, d)
    table.insert(flat, redis.call('HGET', P .. 'domains', d) or '0')
  end
  return flat
end

local function unknown(watched)
  if watched == '*' then return {} end
  local known, missing = {}, {}
  for k in string.gmatch(watched, '[^\\n]+') do known[k] = true end
  for _, k in ipairs(redis.call('SMEMBERS', P .. 'antikeys')) do
    if not known[k] then table.insert(missing, k) end
  end
  table.sort(missing)
  return missing
end

local function record(keys)
  for k in string.gmatch(keys, '[^\\n]+') do redis.call('SADD', P .. 'antikeys', k) end
end

local function moved(reads)
  local names, flat, changed = {}, {}, {}
  for d, v in string.gmatch(reads, '([^\\n]+)\\n([^\\n]+)') do
    local cur = redis.call('HGET', P .. 'domains', d) or '0'
    table.insert(flat, d)
    table.insert(flat, cur)
    if cur ~= v then table.insert(changed, d) end
  end
  if #changed == 0 then return nil end
  table.sort(changed)
  return {table.concat(changed, ', '), flat}
end

-- The devices others hold; a pod whose assumption expired holds nothing (released).
local function taken(uid, devices)
  local held, mine = {}, 'pod:' .. uid
  for d in string.gmatch(devices, '[^\\n]+') do
    local holder = redis.call('HGET', P .. 'devices', d)
    if holder and holder ~= mine and string.sub(holder, 1, 4) == 'pod:' then
      local other = string.sub(holder, 5)
      local v = redis.call('HGET', P .. 'assumed', other)
      if v then
        local _, _, deadline = parse_assumed(v)
        if deadline ~= 'inf' and tonumber(deadline) < now then
          release(other)
          holder = nil
        end
      end
    end
    if holder and holder ~= mine then table.insert(held, d) end
  end
  return held
end

local function hold(uid, devices)
  if devices == '' then return end
  for d in string.gmatch(devices, '[^\\n]+') do
    redis.call('HSET', P .. 'devices', d, 'pod:' .. uid)
  end
  redis.call('HSET', P .. 'devpod', uid, devices)
end

local function assume(uid, node, attempt, deadline, reqs, checked, reads, touches, watched, keys,
                      devices)
  if redis.call('HGET', P .. 'lease', uid) ~= attempt then
    return {'stale', "attempt is not the pod's lease", {}, {}, {}, {}}
  end
  if redis.call('HEXISTS', P .. 'charge', uid) == 1 then
    return {'stale', 'pod is bound', {}, {}, {}, {}}
  end
  local cur = redis.call('HGET', P .. 'assumed', uid)
  if cur then
    local cnode, cattempt, cdeadline = parse_assumed(cur)
    if cdeadline == 'inf' then return {'stale', 'pod is binding', {}, {}, {}, {}} end
    if cnode == node and cattempt == attempt and tonumber(cdeadline) >= now then
      touch(touches)
      record(keys)
      return {'assumed', '', {}, {}, {}, {}}
    end
    release(uid)
  end
  if not swept[node] then
    swept[node] = true
    sweep(node)
  end
  local flat = redis.call('HGETALL', P .. 'usage:' .. node)
  if redis.call('SISMEMBER', P .. 'nodes', node) == 0 then
    return {'conflict', 'node not found', flat, {}, {}, {}}
  end
  local usage = tomap(flat)
  local alloc = tomap(redis.call('HGETALL', P .. 'alloc:' .. node))
  local reasons = {}
  if checks(checked, 'pods') and (usage['pods'] or 0) + 1 > (alloc['pods'] or 0) then
    table.insert(reasons, 'Too many pods')
  end
  for name, amt in string.gmatch(reqs, '([^,=]+)=([^,]+)') do
    if name ~= 'pods' and checks(checked, name)
        and (usage[name] or 0) + tonumber(amt) > (alloc[name] or 0) then
      table.insert(reasons, 'Insufficient ' .. name)
    end
  end
  if #reasons > 0 then return {'conflict', table.concat(reasons, ', '), flat, {}, {}, {}} end
  local m = moved(reads)
  if m then return {'conflict', 'placements changed in ' .. m[1], flat, m[2], {}, {}} end
  local missing = unknown(watched)
  if #missing > 0 then
    local why = 'pods with required anti-affinity on ' .. table.concat(missing, ', ') .. ' placed'
    return {'conflict', why, flat, current(reads), missing, {}}
  end
  local held = taken(uid, devices)
  if #held > 0 then return {'conflict', '', flat, {}, {}, held} end
  redis.call('HSET', P .. 'assumed', uid, table.concat({node, attempt, deadline, reqs}, '|'))
  redis.call('SADD', P .. 'assumed:' .. node, uid)
  incr(node, reqs, 1)
  touch(touches)
  record(keys)
  hold(uid, devices)
  return {'assumed', '', {}, {}, {}, {}}
end

-- A refusal voids every later decision of the call that read a domain it touched: it
-- was taken with the refused pod in its snapshot, and its expected versions count it.
local function voided(node, reads)
  local usage = redis.call('HGETALL', P .. 'usage:' .. node)
  return {'conflict', 'an earlier reservation of the same call was refused', usage,
          current(reads), {}, {}}
end

local function depends(reads, gone)
  for d in string.gmatch(reads, '([^\\n]+)\\n[^\\n]+') do
    if gone[d] then return true end
  end
  return false
end

local out = {}
local i = 5
local gone = {}
for k = 1, tonumber(ARGV[4]) do
  if depends(ARGV[i + 6], gone) then
    out[k] = voided(ARGV[i + 1], ARGV[i + 6])
  else
    out[k] = assume(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5],
                    ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9], ARGV[i + 10])
  end
  if out[k][1] ~= 'assumed' then
    for d in string.gmatch(ARGV[i + 7], '[^\\n]+') do gone[d] = true end
  end
  i = i + 11
end
return out
"""
)

BEGIN_BIND = (
    _HELPERS
    + """
-- ARGV: P, expected, now, count, then per claim: uid, node, attempt. Returns 1/0 per
-- claim. An assumption past its deadline is released, not claimed.
guard()
local now = tonumber(ARGV[3])
local out = {}
local i = 5
for k = 1, tonumber(ARGV[4]) do
  local uid, node, attempt = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  out[k] = 0
  local v = redis.call('HGET', P .. 'assumed', uid)
  if v then
    local anode, aattempt, deadline, reqs = parse_assumed(v)
    if anode == node and aattempt == attempt and deadline ~= 'inf'
        and tonumber(deadline) < now then
      release(uid)
    elseif anode == node and aattempt == attempt then
      if deadline ~= 'inf' then
        redis.call('HSET', P .. 'assumed', uid, table.concat({node, attempt, 'inf', reqs}, '|'))
        redis.call('SREM', P .. 'assumed:' .. node, uid)
      end
      out[k] = 1
    end
  end
end
return out
"""
)

FORGET = (
    _HELPERS
    + """
-- ARGV: P, expected, count, then per claim: uid, node, attempt.
guard()
local i = 4
for _ = 1, tonumber(ARGV[3]) do
  local uid, node, attempt = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  local v = redis.call('HGET', P .. 'assumed', uid)
  if v then
    local anode, aattempt = parse_assumed(v)
    if anode == node and aattempt == attempt then release(uid) end
  end
end
return 0
"""
)

READ_NODES = (
    _GUARD
    + """
-- ARGV: P, expected, 'usage' | 'alloc', then node names (none: every node).
-- Returns a flat list: node, {field, value, ...}, node, {...}, ...
guard()
local which = ARGV[3]
local names = {}
if #ARGV == 3 then
  if which == 'usage' then
    names = redis.call('SUNION', P .. 'nodes', P .. 'used')
  else
    names = redis.call('SMEMBERS', P .. 'nodes')
  end
else
  for j = 4, #ARGV do names[#names + 1] = ARGV[j] end
end
local out = {}
for _, name in ipairs(names) do
  if which == 'usage' or redis.call('SISMEMBER', P .. 'nodes', name) == 1 then
    out[#out + 1] = name
    out[#out + 1] = redis.call('HGETALL', P .. which .. ':' .. name)
  end
end
return out
"""
)

WRITE_HASH = (
    _GUARD
    + """
-- ARGV: P, expected, 'set' | 'del', name, then field, value, ... ('set') or fields ('del').
guard()
local fields = {}
for j = 5, #ARGV do fields[#fields + 1] = ARGV[j] end
if ARGV[3] == 'set' then
  redis.call('HSET', P .. ARGV[4], unpack(fields))
else
  redis.call('HDEL', P .. ARGV[4], unpack(fields))
end
return 0
"""
)

CLAIM_NOMINATIONS = (
    _GUARD
    + """
-- ARGV: P, expected, n, then per claim: uid, node, priority, #seen, seen..., #clears,
-- clears... Records each claim unless {P}nominated holds another pod nominated to the
-- node with equal or higher priority that the claim did not see. Returns the uids of
-- the claims refused.
guard()
local key = P .. 'nominated'
local flat = redis.call('HGETALL', key)
local held = {}
for j = 1, #flat, 2 do
  local value = flat[j + 1]
  local bar = string.find(value, '|[^|]*$')
  held[flat[j]] = {string.sub(value, 1, bar - 1), tonumber(string.sub(value, bar + 1))}
end
local lost = {}
local i = 4
for _ = 1, tonumber(ARGV[3]) do
  local uid, node, text = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local priority = tonumber(text)
  local seen = {}
  local nseen = tonumber(ARGV[i + 3])
  for k = 1, nseen do seen[ARGV[i + 3 + k]] = true end
  i = i + 4 + nseen
  local nclears = tonumber(ARGV[i])
  local clears = {}
  for k = 1, nclears do clears[k] = ARGV[i + k] end
  i = i + 1 + nclears
  local taken = false
  for other, n in pairs(held) do
    if other ~= uid and n[1] == node and n[2] >= priority and not seen[other] then
      taken = true
      break
    end
  end
  if taken then
    lost[#lost + 1] = uid
  else
    redis.call('HSET', key, uid, node .. '|' .. text)
    held[uid] = {node, priority}
    for _, c in ipairs(clears) do
      redis.call('HDEL', key, c)
      held[c] = nil
    end
  end
end
return lost
"""
)
