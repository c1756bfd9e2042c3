#include "actors/store/redis/redis_store.hpp"

#include <algorithm>
#include <cstdio>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <boost/uuid/detail/sha1.hpp>
#include <caf/send.hpp>

#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

// Redis names scripts by the hex SHA-1 of their text.
std::string sha1_hex(const std::string& text) {
  boost::uuids::detail::sha1 h;
  h.process_bytes(text.data(), text.size());
  boost::uuids::detail::sha1::digest_type digest;
  h.get_digest(digest);
  char out[41];
  for (int i = 0; i < 5; ++i)
    std::snprintf(out + i * 8, 9, "%08x", digest[i]);
  return std::string{out, 40};
}

} // namespace

redis_store::redis_store(redis_settings s, event_sink on_event, resync_sink on_resync,
                         std::shared_ptr<store_reporter> reporter)
  : settings_(std::move(s)),
    on_event_(std::move(on_event)),
    on_resync_(std::move(on_resync)),
    reporter_(std::move(reporter)) {
  for (auto id : {redis::script_id::acquire, redis::script_id::renew, redis::script_id::release,
                  redis::script_id::expire, redis::script_id::peek, redis::script_id::list})
    shas_.push_back(sha1_hex(redis::script_for(id).body));
}

redis_store::~redis_store() {
  stop();
}

void redis_store::start() {
  if (thread_.joinable())
    return;
  redis::connection::settings cmd;
  cmd.where = settings_.where;
  cmd.timeout = settings_.timeout;
  cmd.role = "commands";
  auto note = [reporter = reporter_](log_level level, std::string_view event,
                                     const boost::json::object& fields) {
    if (reporter)
      reporter->note(level, event, fields);
  };
  cmd.note = note;
  // Loaded once per connection; a NOSCRIPT later (SCRIPT FLUSH, a failover) falls back to EVAL.
  for (auto id : {redis::script_id::acquire, redis::script_id::renew, redis::script_id::release,
                  redis::script_id::expire, redis::script_id::peek, redis::script_id::list})
    cmd.setup.push_back({"SCRIPT", "LOAD", redis::script_for(id).body});
  commands_ = redis::connection::make(io_, std::move(cmd));
  redis::connection::settings sub;
  sub.where = settings_.where;
  sub.timeout = settings_.timeout;
  sub.role = "events";
  sub.note = note;
  sub.setup.push_back({"SUBSCRIBE", channel()});
  sub.keepalive = std::max(settings_.timeout, std::chrono::milliseconds{1000});
  events_ = redis::connection::make(
    io_, std::move(sub),
    [this](bool up, const std::string&) {
      if (up && on_resync_)
        on_resync_();
    },
    [this](const redis::value& msg) {
      // ["message", channel, payload]
      if (msg.elements.size() != 3 || !on_event_)
        return;
      if (auto ev = parse_store_event(msg.elements[2].str))
        on_event_(*ev);
    });
  work_.emplace(io_.get_executor());
  thread_ = std::thread{[this] { io_.run(); }};
  commands_->start();
  events_->start();
}

void redis_store::stop() {
  if (!thread_.joinable())
    return;
  commands_->stop();
  events_->stop();
  work_.reset();
  // Runs after both stops (one thread, handlers in order): whatever is left is abandoned.
  boost::asio::post(io_, [this] { io_.stop(); });
  thread_.join();
}

bool redis_store::ready() const noexcept {
  return commands_ && events_ && commands_->up() && events_->up();
}

void redis_store::run(redis::script_id id, std::vector<std::string> keys,
                      std::vector<std::string> args, redis::reply_handler done) {
  auto& sha = shas_[static_cast<size_t>(id)];
  redis::command cmd{"EVALSHA", sha, std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  auto conn = commands_;
  commands_->send(cmd, [conn, id, cmd, done = std::move(done)](redis::outcome o) mutable {
    if (o && o.reply->is_error()) {
      auto& err = o.reply->str;
      if (err.rfind("NOSCRIPT", 0) == 0) {
        // Redis lost its script cache: EVAL sends the text (and caches it again).
        cmd[0] = "EVAL";
        cmd[1] = redis::script_for(id).body;
        conn->send(std::move(cmd), std::move(done));
        return;
      }
      if (err.rfind("READONLY", 0) == 0 || err.rfind("MASTERDOWN", 0) == 0) {
        // A replica answers (after a failover behind the same name, say): connect again, which
        // resolves the host again, rather than failing every write on this connection.
        conn->reset("the server is a read-only replica");
      }
    }
    done(std::move(o));
  });
}

void redis_store::post(std::function<void()> f) {
  boost::asio::post(io_, std::move(f));
}

const redis_settings& redis_store::settings() const noexcept {
  return settings_;
}

std::string script_runner::lock_key(std::string_view name) const {
  return settings().key_prefix + "lock:" + std::string{name};
}

std::string script_runner::token_key() const {
  return settings().key_prefix + "token";
}

std::string script_runner::held_key() const {
  return settings().key_prefix + "held";
}

std::string script_runner::channel() const {
  return settings().key_prefix + "events";
}

// -- the actor ---------------------------------------------------------------------------------

namespace {

using self_ptr = redis_store_actor::stateful_pointer<redis_store_actor_state>;

std::string keep_ms(const script_runner& s) {
  return std::to_string(s.settings().keep_ended.count());
}

// Deadlines are reported as Redis's clock has them, so that every instance tells the same.
lock_list to_lock_list(std::vector<redis::script_lease> xs, uint32_t limit) {
  lock_list result;
  for (auto& x : xs) {
    lock_status entry;
    entry.name = std::move(x.name);
    entry.held = true;
    entry.owner = std::move(x.owner);
    entry.token = x.token;
    entry.expires_at_ms = x.deadline_ms;
    entry.last_token = x.token;
    entry.revision = x.revision;
    result.locks.push_back(std::move(entry));
  }
  if (!result.locks.empty() && result.locks.size() == limit)
    result.next_cursor = result.locks.back().name;
  return result;
}

caf::error store_failure(const std::string& why) {
  return caf::make_error(errc::store_unavailable, "redis store: " + why);
}

// Sends one script call; its reply comes back as a redis_reply message.
uint64_t start_call(self_ptr self, redis::script_id id, std::vector<std::string> keys,
                    std::vector<std::string> args) {
  auto& st = self->state;
  auto call_id = st.next_call++;
  auto handle = caf::actor_cast<caf::actor>(self);
  st.store->run(id, std::move(keys), std::move(args), [handle, call_id](redis::outcome o) {
    caf::anon_send(handle, redis_reply_atom_v, call_id, redis_reply{std::move(o)});
  });
  return call_id;
}

caf::result<redis::script_lease> call_one(self_ptr self, redis::script_id id,
                                          std::vector<std::string> keys,
                                          std::vector<std::string> args) {
  auto call_id = start_call(self, id, std::move(keys), std::move(args));
  auto& c = self->state.calls[call_id];
  c.script = id;
  c.sent = std::chrono::steady_clock::now();
  c.one = self->make_response_promise<redis::script_lease>();
  return c.one;
}

} // namespace

redis_store_actor::behavior_type redis_store_actor_impl(self_ptr self,
                                                        std::shared_ptr<script_runner> store,
                                                        std::shared_ptr<store_reporter> reporter) {
  self->state.store = std::move(store);
  self->state.reporter = std::move(reporter);
  if (auto floor = self->state.store->settings().fence_floor; floor > 0) {
    self->state.seen_token = floor - 1; // new tokens are above it
    if (self->state.reporter)
      self->state.reporter->note(log_level::info, "fence_floor", {{"fence_floor", floor}});
  }
  return {
    [=](acquire_atom, const acquire_request& req) {
      auto& s = *self->state.store;
      return call_one(self, redis::script_id::acquire,
                      {s.lock_key(req.name), s.token_key(), s.held_key()},
                      {req.name, req.owner, std::to_string(req.ttl_ms),
                       std::to_string(self->state.seen_token + 1), keep_ms(s), s.channel()});
    },
    [=](renew_atom, const renew_request& req) {
      auto& s = *self->state.store;
      return call_one(self, redis::script_id::renew, {s.lock_key(req.name), s.held_key()},
                      {req.name, req.owner, std::to_string(req.token), std::to_string(req.ttl_ms),
                       keep_ms(s), s.channel()});
    },
    [=](release_atom, const release_request& req, const std::string& cause) {
      auto& s = *self->state.store;
      return call_one(self, redis::script_id::release, {s.lock_key(req.name), s.held_key()},
                      {req.name, req.owner, std::to_string(req.token), cause, keep_ms(s),
                       s.channel()});
    },
    [=](expire_atom, const std::string& name, uint64_t token) {
      auto& s = *self->state.store;
      return call_one(self, redis::script_id::expire, {s.lock_key(name), s.held_key()},
                      {name, std::to_string(token), keep_ms(s), s.channel()});
    },
    [=](status_atom, const std::string& name) {
      auto& s = *self->state.store;
      return call_one(self, redis::script_id::peek, {s.lock_key(name)}, {});
    },
    [=](list_atom, const list_request& req) -> caf::result<lock_list> {
      auto& s = *self->state.store;
      auto call_id = start_call(self, redis::script_id::list, {s.held_key()},
                                {s.lock_key(""), req.prefix, req.cursor,
                                 std::to_string(req.limit)});
      auto& c = self->state.calls[call_id];
      c.script = redis::script_id::list;
      c.limit = req.limit;
      c.many = self->make_response_promise<lock_list>();
      return c.many;
    },
    [=](redis_reply_atom, uint64_t call_id, redis_reply& r) {
      auto& st = self->state;
      auto i = st.calls.find(call_id);
      if (i == st.calls.end())
        return;
      auto c = std::move(i->second);
      st.calls.erase(i);
      bool writes = c.script != redis::script_id::peek && c.script != redis::script_id::list;
      if (writes && st.reporter)
        st.reporter->write_took(std::chrono::steady_clock::now() - c.sent);
      if (!r.result) {
        if (c.script == redis::script_id::list)
          c.many.deliver(store_failure(r.result.failure));
        else
          c.one.deliver(store_failure(r.result.failure));
        return;
      }
      std::string why;
      if (c.script == redis::script_id::list) {
        auto xs = redis::decode_list(*r.result.reply, why);
        if (!xs) {
          c.many.deliver(store_failure(why));
          return;
        }
        for (auto& x : *xs)
          st.seen_token = std::max(st.seen_token, x.token);
        c.many.deliver(to_lock_list(std::move(*xs), c.limit));
        return;
      }
      auto x = redis::decode_lease(*r.result.reply, why);
      if (!x) {
        c.one.deliver(store_failure(why));
        return;
      }
      st.seen_token = std::max(st.seen_token, x->token);
      c.one.deliver(std::move(*x));
    },
  };
}

} // namespace fencelock
