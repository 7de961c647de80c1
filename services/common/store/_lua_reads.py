"""The store's Lua scripts that read hashes: one hash, or several with the applied seq
at one moment (``objects_at``). Guarded as every script (services.common.store._lua)."""

from services.common.store._lua import _GUARD

READ_HASH = (
    _GUARD
    + """
-- ARGV: P, expected, name. Returns HGETALL of the hash {P}{name}.
guard()
return redis.call('HGETALL', P .. ARGV[3])
"""
)

READ_HASHES = (
    _GUARD
    + """
-- ARGV: P, expected, name, ... Returns the applied seq (false when none) and the
-- HGETALL of each hash {P}{name}, all at one moment: nothing is applied in between.
guard()
local out = {redis.call('GET', P .. 'seq')}
for j = 3, #ARGV do out[#out + 1] = redis.call('HGETALL', P .. ARGV[j]) end
return out
"""
)
