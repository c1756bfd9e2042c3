-- fenced_set.lua: a fenced write to Redis, atomic by construction.
--
-- Redis runs a script to completion before it serves any other command, so the check of the
-- token and the write below cannot be interleaved with another client's write.
--
-- KEYS[1]  the data key to write.
-- KEYS[2]  the fence key: the highest token accepted so far for the lock. Several data keys
--          protected by the same lock share one fence key.
-- ARGV[1]  the fencing token of the writer's lease, as a decimal integer string ("42").
-- ARGV[2]  the value to store in KEYS[1].
--
-- Returns {1, token}  when the write was admitted: no fence yet, or token >= the fence (equal
--                     is the same holder writing again). The fence is now token.
--         {0, fence}  when the token is lower than the fence: a stale holder. Nothing was written.
-- The token and fence in the reply are bulk strings, so a 64-bit token comes back exactly.
-- A token that is not a non-negative decimal integer is a Redis error reply (nothing written).
--
-- Load it once with SCRIPT LOAD and call it with
--   EVALSHA <sha1> 2 <data key> <fence key> <token> <value>
-- In Redis Cluster both keys must hash to the same slot: give them a common hash tag, e.g.
-- "{orders}:data" and "{orders}:fence".

local token = ARGV[1]
local value = ARGV[2]

-- Accept only canonical decimal integers ("0" or no leading zero), so that comparing them as
-- digit strings is exact. Lua numbers are doubles: tonumber() would round tokens above 2^53.
local function is_canonical(s)
  return type(s) == 'string' and (s == '0' or string.match(s, '^[1-9]%d*$') ~= nil)
end

-- Returns whether canonical integer string a < canonical integer string b.
local function less(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end

if not is_canonical(token) then
  return redis.error_reply('ERR fenced_set: token must be a non-negative decimal integer, got "'
                           .. tostring(token) .. '"')
end
if value == nil then
  return redis.error_reply('ERR fenced_set: missing value (ARGV[2])')
end

local fence = redis.call('GET', KEYS[2])
if fence then
  if not is_canonical(fence) then
    -- Fail closed: a corrupted fence must not let any writer through.
    return redis.error_reply('ERR fenced_set: fence key holds a non-integer: "' .. fence .. '"')
  end
  if less(token, fence) then
    return {0, fence}
  end
end

redis.call('SET', KEYS[2], token)
redis.call('SET', KEYS[1], value)
return {1, token}
