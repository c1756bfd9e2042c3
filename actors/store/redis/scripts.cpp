#include "actors/store/redis/scripts.hpp"

#include <charconv>

#include "fencelock/types.hpp"

namespace fencelock::redis {

namespace {

// Shared by every script. Redis runs a script to completion before any other command, so each
// script below is one atomic step over the lock's record, the token counter and the index of
// held locks. Numbers go back to Redis through num(): Lua's own number-to-string conversion
// keeps only 14 digits, and tokens have 16.
//
// A lock's record (hash KEYS[1]): owner, token, ttl (ms), deadline (µs on Redis's clock), rev,
// state ("held" or "ended"). An ended record stays for `keep` ms so that its end is published
// once and its last token stays visible; Redis drops it after that.
constexpr std::string_view prelude = R"lua(
local function num(x) return string.format('%.0f', x) end
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function load(key)
  local r = redis.call('HMGET', key, 'owner', 'token', 'ttl', 'deadline', 'rev', 'state')
  if not r[2] then return nil end
  return {owner = r[1], token = tonumber(r[2]), ttl = tonumber(r[3]),
          deadline = tonumber(r[4]), rev = tonumber(r[5]), state = r[6]}
end
local function remaining_ms(rec, now)
  return math.max(0, math.ceil((rec.deadline - now) / 1000))
end
local function publish(channel, kind, name, rec, rev, now, cause)
  local ev = {kind = kind, name = name, owner = rec.owner, token = num(rec.token),
              revision = num(rev), expires_at_ms = num(math.floor(rec.deadline / 1000)),
              at_ms = num(math.floor(now / 1000))}
  if cause then ev.cause = cause end
  redis.call('PUBLISH', channel, cjson.encode(ev))
end
local function reply(status, rec, now)
  return {status, rec.owner, num(rec.token), num(rec.ttl), num(remaining_ms(rec, now)), num(rec.rev),
          num(math.floor(rec.deadline / 1000))}
end
local function live(rec, now)
  return rec and rec.state == 'held' and now < rec.deadline
end
-- Ends the record's lease as `cause` (published once: the record is marked ended).
local function finish(key, held, name, rec, now, cause, keep, channel)
  rec.rev = rec.rev + 1
  redis.call('HSET', key, 'state', 'ended', 'rev', num(rec.rev))
  redis.call('PEXPIRE', key, keep)
  redis.call('ZREM', held, name)
  local kind = 'released'
  if cause == 'expired' or cause == 'undelivered' then kind = 'expired' end
  publish(channel, kind, name, rec, rec.rev, now, cause)
end
-- A lease past its deadline that nobody has ended yet ends now, before anything else happens.
local function settle(key, held, name, rec, now, keep, channel)
  if rec and rec.state == 'held' and now >= rec.deadline then
    finish(key, held, name, rec, now, 'expired', keep, channel)
  end
end
local function extend(key, name, rec, ttl, now, keep, channel)
  rec.ttl = ttl
  rec.deadline = now + ttl * 1000
  rec.rev = rec.rev + 1
  redis.call('HSET', key, 'ttl', num(ttl), 'deadline', num(rec.deadline), 'rev', num(rec.rev))
  redis.call('PEXPIRE', key, ttl + keep)
  publish(channel, 'renewed', name, rec, rec.rev, now)
end
)lua";

// KEYS: lock, token counter, held index. ARGV: name, owner, ttl_ms, floor, keep_ms, channel.
// A grant answers the lease and, eighth, the token of the lease it replaced (0 = none).
// The token is above the counter, above Redis's clock in µs and above the caller's floor: a
// counter that Redis lost (restart without persistence, failover to a replica that lagged)
// starts again above every token it had handed out (docs/redis.md, "Tokens").
constexpr std::string_view acquire_body = R"lua(
local key, counter, held = KEYS[1], KEYS[2], KEYS[3]
local name, owner, ttl, floor = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local keep, channel = tonumber(ARGV[5]), ARGV[6]
local now = now_us()
local rec = load(key)
if live(rec, now) then
  if rec.owner ~= owner then return reply('held', rec, now) end
  extend(key, name, rec, ttl, now, keep, channel)
  return reply('refreshed', rec, now)
end
settle(key, held, name, rec, now, keep, channel)
-- The lease this grant replaces, ended by a script (now or before): an instance that watched a
-- lease it does not find here knows that the store lost it.
local prev = 0
if rec then prev = rec.token end
local token = math.max(tonumber(redis.call('GET', counter) or '0') + 1, now, floor)
if token > 9007199254740991 then return redis.error_reply('fencing tokens exhausted') end
redis.call('SET', counter, num(token))
rec = {owner = owner, token = token, ttl = ttl, deadline = now + ttl * 1000, rev = 0}
redis.call('DEL', key)
redis.call('HSET', key, 'owner', owner, 'token', num(token), 'ttl', num(ttl),
           'deadline', num(rec.deadline), 'rev', '0', 'state', 'held')
redis.call('PEXPIRE', key, ttl + keep)
redis.call('ZADD', held, 0, name)
publish(channel, 'acquired', name, rec, 0, now)
local out = reply('granted', rec, now)
out[8] = num(prev)
return out
)lua";

// KEYS: lock, held index. ARGV: name, owner, token, ttl_ms (0 = the lease's own), keep_ms,
// channel.
constexpr std::string_view renew_body = R"lua(
local key, held = KEYS[1], KEYS[2]
local name, owner, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local keep, channel = tonumber(ARGV[5]), ARGV[6]
local now = now_us()
local rec = load(key)
if not live(rec, now) or rec.owner ~= owner or rec.token ~= token then
  settle(key, held, name, rec, now, keep, channel)
  return {'lost'}
end
if ttl <= 0 then ttl = rec.ttl end
extend(key, name, rec, ttl, now, keep, channel)
return reply('ok', rec, now)
)lua";

// KEYS: lock, held index. ARGV: name, owner, token, cause, keep_ms, channel.
constexpr std::string_view release_body = R"lua(
local key, held = KEYS[1], KEYS[2]
local name, owner, token, cause = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local keep, channel = tonumber(ARGV[5]), ARGV[6]
local now = now_us()
local rec = load(key)
if not live(rec, now) or rec.owner ~= owner or rec.token ~= token then
  settle(key, held, name, rec, now, keep, channel)
  return {'lost'}
end
finish(key, held, name, rec, now, cause, keep, channel)
return reply('ok', rec, now)
)lua";

// KEYS: lock, held index. ARGV: name, token, keep_ms, channel. Ends lease `token` if its
// deadline passed: called by the instance that armed a timer for it. `missing`: the lock has no
// record at all, which before the deadline (plus the 60 s an ended record is kept) means Redis
// lost it; `gone`: it ended (or was replaced) by a script, whose event says so.
constexpr std::string_view expire_body = R"lua(
local key, held = KEYS[1], KEYS[2]
local name, token = ARGV[1], tonumber(ARGV[2])
local keep, channel = tonumber(ARGV[3]), ARGV[4]
local now = now_us()
local rec = load(key)
if not rec then return {'missing'} end
if rec.token ~= token or rec.state ~= 'held' then return {'gone'} end
if now < rec.deadline then return reply('alive', rec, now) end
finish(key, held, name, rec, now, 'expired', keep, channel)
return {'ended'}
)lua";

// KEYS: lock. The lock's lease as it stands (read only).
constexpr std::string_view peek_body = R"lua(
local now = now_us()
local rec = load(KEYS[1])
if live(rec, now) then return reply('held', rec, now) end
if rec then return {'free', '', num(rec.token), '0', '0', '0', '0'} end
return {'free', '', '0', '0', '0', '0', '0'}
)lua";

// KEYS: held index. ARGV: key prefix of lock records, name prefix, cursor, limit. Returns
// {name, owner, token, ttl, remaining, rev, deadline} per held lock, in name order after the cursor.
// Index entries whose record is gone or ended are dropped on the way.
constexpr std::string_view list_body = R"lua(
local held = KEYS[1]
local key_prefix, prefix, cursor, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_us()
local min = '[' .. prefix
if cursor ~= '' and cursor >= prefix then min = '(' .. cursor end
local max = '[' .. prefix .. '\255'
local out, found = {}, 0
while found < limit do
  local names = redis.call('ZRANGEBYLEX', held, min, max, 'LIMIT', 0, limit)
  if #names == 0 then break end
  for _, name in ipairs(names) do
    local rec = load(key_prefix .. name)
    if live(rec, now) then
      local r = reply('held', rec, now)
      r[1] = name
      for _, x in ipairs(r) do out[#out + 1] = x end
      found = found + 1
      if found == limit then break end
    elseif not rec or rec.state ~= 'held' then
      redis.call('ZREM', held, name)
    end
    min = '(' .. name
  end
end
return out
)lua";

// Every lease in a script's answer is this many values (see reply() in the prelude).
constexpr size_t lease_fields = 7;

std::string with_prelude(std::string_view body) {
  std::string s{prelude};
  s += body;
  return s;
}

template <class T>
bool to_number(const value& v, T& out) {
  if (v.type == value::kind::integer) {
    out = static_cast<T>(v.integer);
    return true;
  }
  if (v.type != value::kind::string && v.type != value::kind::status)
    return false;
  auto [ptr, ec] = std::from_chars(v.str.data(), v.str.data() + v.str.size(), out);
  return ec == std::errc{} && ptr == v.str.data() + v.str.size();
}

// Longest TTL or time left a reply may carry: far above any TTL the service grants (a day at
// most), far below what would overflow the deadline arithmetic on it (redis_runtime.cpp).
constexpr int64_t max_reply_ms = int64_t{365} * 24 * 3600 * 1000;

// Reads {status, owner, token, ttl, remaining, rev, deadline} starting at `at`. Numbers outside
// what the scripts can answer are malformed: a reply from something else must fail closed
// rather than become a lease.
bool read_lease(const std::vector<value>& xs, size_t at, script_lease& out) {
  if (xs.size() < at + lease_fields || xs[at].type != value::kind::string
      || xs[at + 1].type != value::kind::string)
    return false;
  out.status = xs[at].str;
  out.owner = xs[at + 1].str;
  return to_number(xs[at + 2], out.token) && to_number(xs[at + 3], out.ttl_ms)
         && to_number(xs[at + 4], out.remaining_ms) && to_number(xs[at + 5], out.revision)
         && to_number(xs[at + 6], out.deadline_ms) && out.token <= max_token
         && out.revision <= max_token && out.ttl_ms >= 0 && out.ttl_ms <= max_reply_ms
         && out.remaining_ms >= 0 && out.remaining_ms <= max_reply_ms && out.deadline_ms >= 0;
}

// Returns what a Redis error reply says, never nothing: callers report it as the failure.
std::string error_text(const value& v) {
  return v.str.empty() ? std::string{"an error reply without a message"} : v.str;
}

} // namespace

const script& script_for(script_id id) {
  static const script scripts[] = {
    script{"acquire", with_prelude(acquire_body)}, script{"renew", with_prelude(renew_body)},
    script{"release", with_prelude(release_body)}, script{"expire", with_prelude(expire_body)},
    script{"peek", with_prelude(peek_body)},       script{"list", with_prelude(list_body)},
  };
  return scripts[static_cast<size_t>(id)];
}

std::optional<script_lease> decode_lease(const value& v, std::string& why) {
  if (v.is_error()) {
    why = error_text(v);
    return std::nullopt;
  }
  if (v.type != value::kind::array || v.elements.empty()) {
    why = "unexpected reply: " + describe(v);
    return std::nullopt;
  }
  script_lease out;
  if (v.elements.size() == 1) { // {'lost'}, {'gone'}, {'ended'}, {'missing'}
    if (v.elements[0].type != value::kind::string) {
      why = "malformed lease reply";
      return std::nullopt;
    }
    out.status = v.elements[0].str;
    return out;
  }
  if (!read_lease(v.elements, 0, out)) {
    why = "malformed lease reply";
    return std::nullopt;
  }
  if (v.elements.size() > lease_fields
      && (!to_number(v.elements[lease_fields], out.replaced) || out.replaced > max_token)) {
    why = "malformed lease reply";
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<script_lease>> decode_list(const value& v, std::string& why) {
  if (v.is_error()) {
    why = error_text(v);
    return std::nullopt;
  }
  if (v.type != value::kind::array || v.elements.size() % lease_fields != 0) {
    why = "unexpected list reply: " + describe(v);
    return std::nullopt;
  }
  std::vector<script_lease> out;
  for (size_t i = 0; i < v.elements.size(); i += lease_fields) {
    script_lease x;
    if (!read_lease(v.elements, i, x)) {
      why = "malformed list reply";
      return std::nullopt;
    }
    x.name = std::move(x.status);
    x.status = "held";
    out.push_back(std::move(x));
  }
  return out;
}

} // namespace fencelock::redis
