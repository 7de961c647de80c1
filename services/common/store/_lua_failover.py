"""The Lua script behind RedisStore.invalidate (see :mod:`services.common.store._lua`
for the layout): Live with the given token → Building, in one step."""

from __future__ import annotations

INVALIDATE = """
-- ARGV: P, token. Returns 1 when the store was Live with token (now Building), else 0.
local P, token = ARGV[1], ARGV[2]
if redis.call('GET', P .. 'epoch') ~= 'live:' .. token then return 0 end
redis.call('SET', P .. 'epoch', 'building')
return 1
"""
