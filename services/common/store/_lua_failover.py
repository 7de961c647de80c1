"""The Lua script behind RedisStore.invalidate (see :mod:`services.common.store._lua`
for the layout): Live with the given token → Building, in one step, fenced like every
write of the informer's (a deposed informer cannot end the epoch its successor runs)."""

from __future__ import annotations

from services.common.store._lua_leases import FENCE

INVALIDATE = (
    FENCE
    + """
-- ARGV: P, ''|role|token, token. Fenced, not guarded by the epoch (it ends it).
-- Returns 1 when the store was Live with token (now Building), else 0.
fenced()
if redis.call('GET', P .. 'epoch') ~= 'live:' .. ARGV[3] then return 0 end
redis.call('SET', P .. 'epoch', 'building')
return 1
"""
)
