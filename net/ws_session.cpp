#include "common/log.hpp"
#include "net/ws_session.hpp"

#include <chrono>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket/error.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "fencelock/validate.hpp" // invalid_field
#include "net/json.hpp"
#include "net/routes.hpp" // make_request_id

#ifndef FENCELOCK_VERSION
#  define FENCELOCK_VERSION "0.1.0"
#endif

namespace fencelock::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;

namespace {

/// How long a closing socket may take to finish its close handshake (a client that stopped
/// reading never will) before the TCP connection is dropped.
constexpr std::chrono::seconds close_grace{2};

/// Time a client has to complete the upgrade.
constexpr std::chrono::seconds handshake_timeout{10};

/// Returns whether `ec` is an ordinary end of a WebSocket, not worth a log line.
bool is_quiet(const boost::system::error_code& ec) {
  return ec == websocket::error::closed || ec == asio::error::operation_aborted
         || ec == asio::error::eof || ec == asio::error::connection_reset
         || ec == beast::error::timeout;
}

json::array to_json(const std::vector<lock_status>& locks) {
  json::array out;
  out.reserve(locks.size());
  for (const auto& st : locks)
    out.push_back(net::to_json(st));
  return out;
}

} // namespace

// --- opening ------------------------------------------------------------------------------------

namespace {

/// Rewrites a handshake refusal that Beast wrote as text (400 for a bad key, 426 for another
/// protocol version) into the JSON error every other refusal has.
void as_json_error(websocket::response_type& res) {
  auto why = std::string{"WebSocket handshake refused: "} + res.body();
  res.body() = boost::json::serialize(
    boost::json::object{{"error", "invalid_request"}, {"message", std::move(why)}});
  res.set(beast::http::field::content_type, "application/json");
  res.prepare_payload();
}

} // namespace

ws_session::ws_session(flex_stream&& stream, std::shared_ptr<server_context> ctx, std::string peer,
                       std::optional<token_hash> credential, std::string certificate_name)
  : ctx_(std::move(ctx)), ws_(std::move(stream)), close_timer_(ws_.get_executor()),
    peer_(std::move(peer)), id_(make_request_id()), rate_(ctx_->cfg().max_request_rate),
    credential_(std::move(credential)), certificate_name_(std::move(certificate_name)) {
}

void ws_session::run(beast::http::request<beast::http::string_body> req) {
  const auto& cfg = ctx_->cfg();
  websocket::stream_base::timeout timeouts;
  timeouts.handshake_timeout = handshake_timeout;
  timeouts.idle_timeout = std::chrono::milliseconds{cfg.ws_idle_timeout_ms};
  timeouts.keep_alive_pings = true; // a ping after half the idle time keeps live peers open
  ws_.set_option(timeouts);
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
    res.set(beast::http::field::server, "fencelock");
    if (res.result() != beast::http::status::switching_protocols)
      as_json_error(res); // a refused handshake speaks the API's error shape too
  }));
  ws_.read_message_max(cfg.ws_max_frame); // larger: Beast closes with 1009
  ws_.auto_fragment(false);
  ws_.next_layer().listen(weak_from_this());
  ws_.async_accept(req, beast::bind_front_handler(&ws_session::on_accept, shared_from_this()));
}

void ws_session::on_accept(error_code ec) {
  if (ec)
    return on_closed(ec, "accept");
  open_ = true;
  log_event(log_level::debug, "ws_open", {{"session", id_}, {"peer", peer_}});
  send(hello_frame(id_, FENCELOCK_VERSION, ctx_->cfg()));
  do_read();
}

// --- reading requests ---------------------------------------------------------------------------

void ws_session::do_read() {
  if (closing_ || reading_ || draining_)
    return;
  if (pending_ >= ctx_->cfg().ws_max_pending)
    return; // backpressure: answered() resumes reading
  reading_ = true;
  ws_.async_read(in_, beast::bind_front_handler(&ws_session::on_read, shared_from_this()));
}

void ws_session::on_read(error_code ec, std::size_t) {
  reading_ = false;
  if (ec == websocket::error::message_too_big) {
    // Beast has sent close 1009 already.
    log_event(log_level::debug, "ws_frame_too_big",
              {{"session", id_}, {"max_frame", ctx_->cfg().ws_max_frame}});
    return on_closed(ec, "read");
  }
  if (ec)
    return on_closed(ec, "read");
  if (closing_)
    return;
  if (!ws_.got_text()) {
    send(error_frame(nullptr, invalid_field("frame", "must be a text frame holding JSON; binary "
                                                     "frames are not accepted")));
  } else {
    auto data = in_.cdata();
    handle_frame({static_cast<const char*>(data.data()), data.size()});
  }
  in_.consume(in_.size());
  do_read();
}

void ws_session::handle_frame(std::string_view text) {
  auto parsed = parse_ws_request(text, ctx_->cfg());
  if (auto* rejected = std::get_if<ws_rejection>(&parsed))
    return send(error_frame(rejected->id, rejected->error));
  auto& req = std::get<ws_request>(parsed);
  if (!rate_.admit())
    return send(error_frame(req.id, "rate_limited",
                            "more than " + std::to_string(ctx_->cfg().max_request_rate)
                              + " requests per second on this socket",
                            1000));
  if (!admit(req))
    return;
  auto& svc = ctx_->svc();
  auto id = std::move(req.id);
  std::visit(
    [&](auto& call) {
      using T = std::decay_t<decltype(call)>;
      if constexpr (std::is_same_v<T, ws_acquire>) {
        start_acquire(std::move(id), std::move(call));
      } else if constexpr (std::is_same_v<T, renew_request>) {
        start_renew(std::move(id), std::move(call));
      } else if constexpr (std::is_same_v<T, release_request>) {
        start_release(std::move(id), std::move(call));
      } else if constexpr (std::is_same_v<T, ws_subscribe>) {
        start_subscribe(std::move(id), std::move(call));
      } else if constexpr (std::is_same_v<T, ws_unsubscribe>) {
        unsubscribe(id, call.subscription);
      } else if constexpr (std::is_same_v<T, ws_status>) {
        ++pending_;
        svc.status(std::move(call.name), reply_with<lock_status>(id, "status"), context(id));
      } else if constexpr (std::is_same_v<T, check_request>) {
        ++pending_;
        svc.check(std::move(call), reply_with<check_result>(id, "check"), context(id));
      } else if constexpr (std::is_same_v<T, ws_auth>) {
        // Without authentication there is nothing to check: any token is fine.
        send(reply_frame(id, "auth", json::object{{"principal", nullptr}}));
      }
    },
    req.call);
}

bool ws_session::admit(ws_request& req) {
  const auto* auth = ctx_->auth();
  if (auth == nullptr)
    return true;
  if (auto* login = std::get_if<ws_auth>(&req.call)) {
    auto hash = hash_token(login->token);
    auto who = auth->find(hash);
    if (!who) {
      log_denied(unauthenticated_error(), context(req.id).request_id, "", peer_);
      send(error_frame(req.id, unauthenticated_error()));
      return false;
    }
    credential_ = hash;
    send(reply_frame(req.id, "auth", json::object{{"principal", who->name}}));
    return false;
  }
  auto who = credential_                  ? auth->find(*credential_)
             : !certificate_name_.empty() ? auth->find_certified(certificate_name_)
                                          : nullptr;
  if (!who) {
    log_denied(unauthenticated_error(), context(req.id).request_id, "", peer_);
    send(error_frame(req.id, unauthenticated_error()));
    return false;
  }
  if (auto err = authorize(*who, req.call)) {
    log_denied(err, context(req.id).request_id, who->name, peer_);
    send(error_frame(req.id, err));
    return false;
  }
  bool keeps_lease = std::holds_alternative<renew_request>(req.call)
                     || std::holds_alternative<release_request>(req.call);
  if (!keeps_lease && !ctx_->limits().admit(*who)) {
    send(error_frame(req.id, "rate_limited", principal_limits::over_rate(*who), 1000));
    return false;
  }
  const auto* acquire = std::get_if<ws_acquire>(&req.call);
  if (acquire != nullptr && acquire->req.wait_ms > 0 && who->max_waiting > 0) {
    if (!ctx_->limits().start_waiting(*who)) {
      send(error_frame(req.id, principal_limits::over_waiters(*who)));
      return false;
    }
    waiting_as_ = who->name;
  }
  principal_ = who->name;
  return true;
}

// --- operations ---------------------------------------------------------------------------------

void ws_session::start_acquire(json::value id, ws_acquire call) {
  auto& svc = ctx_->svc();
  ++pending_;
  auto request_id = svc.next_request_id();
  call.req.request_id = request_id;
  waiting_acquires_.emplace(request_id, call.req.name);
  // Watched before it is sent, so that a lease that ends before its answer is not missed.
  auto watch_id = watch_lease_end(call.req.name);
  auto name = call.req.name;
  auto owner = call.req.owner;
  auto ctx = context(id);
  svc.acquire(
    std::move(call.req),
    [self = shared_from_this(), id = std::move(id), name, owner, request_id, watch_id,
     session_bound = call.session,
     waiting_as = std::exchange(waiting_as_, {})](caf::expected<lease> x) {
      if (!waiting_as.empty()) // answered: it waits no more
        self->ctx_->limits().end_waiting(waiting_as);
      self->post([=, x = std::move(x)] {
        auto& service = self->ctx_->svc();
        self->waiting_acquires_.erase(request_id);
        if (self->closing_) {
          // Nobody will read this answer: a grant is undone, never left to expire.
          service.unwatch_lease(watch_id);
          if (x)
            service.cancel(name, request_id);
          return;
        }
        self->answered();
        if (!x) {
          service.unwatch_lease(watch_id);
          return self->send(error_frame(id, x.error()));
        }
        service.bind_lease_watch(watch_id, x->token);
        self->remember_lease(name, x->token, owner, watch_id, session_bound);
        self->send(granted_frame(id, *x));
      });
    },
    std::move(ctx));
}

void ws_session::start_renew(json::value id, renew_request req) {
  auto& svc = ctx_->svc();
  ++pending_;
  auto key = lease_key{req.name, req.token};
  uint64_t watch_id = 0;
  if (!leases_.contains(key)) {
    watch_id = watch_lease_end(req.name);
  }
  auto owner = req.owner;
  auto ctx = context(id);
  svc.renew(
    std::move(req),
    [self = shared_from_this(), id = std::move(id), key, owner, watch_id](caf::expected<lease> x) {
      self->post([=, x = std::move(x)] {
        auto& service = self->ctx_->svc();
        if (self->closing_) {
          service.unwatch_lease(watch_id);
          return;
        }
        self->answered();
        if (!x) {
          service.unwatch_lease(watch_id);
          errc code;
          if (as_errc(x.error(), code) && code == errc::lease_lost)
            self->forget_lease(key.first, key.second);
          return self->send(error_frame(id, x.error()));
        }
        if (watch_id != 0) {
          service.bind_lease_watch(watch_id, key.second);
          self->remember_lease(key.first, key.second, owner, watch_id, false);
        }
        self->send(reply_frame_text(id, "renew", lease_json(*x)));
      });
    },
    std::move(ctx));
}

void ws_session::start_release(json::value id, release_request req) {
  ++pending_;
  auto key = lease_key{req.name, req.token};
  auto ctx = context(id);
  ctx_->svc().release(
    std::move(req),
    [self = shared_from_this(), id = std::move(id), key](caf::expected<bool> x) {
      self->post([=, x = std::move(x)] {
        if (self->closing_)
          return;
        self->answered();
        errc code;
        if (x || (as_errc(x.error(), code) && code == errc::lease_lost))
          self->forget_lease(key.first, key.second); // released, or over anyway
        self->send(x ? reply_frame_text(id, "release", R"({"released":true})")
                     : error_frame(id, x.error()));
      });
    },
    std::move(ctx));
}

void ws_session::start_subscribe(json::value id, ws_subscribe call) {
  if (subscriptions_.size() >= ctx_->cfg().ws_max_subscriptions)
    return send(error_frame(
      id, invalid_field("subscribe", "this socket holds the most subscriptions allowed ("
                                       + std::to_string(ctx_->cfg().ws_max_subscriptions) + ")")));
  ++pending_;
  // The id is known once subscribe() returns, which is before anything posted to the strand
  // runs.
  auto sub_id = std::make_shared<uint64_t>(0);
  std::weak_ptr<ws_session> weak = shared_from_this();
  auto ctx = context(id);
  auto assigned = ctx_->svc().subscribe(
    std::move(call.req),
    [weak, id, sub_id](caf::expected<lock_list> x) {
      auto self = weak.lock();
      if (!self)
        return;
      self->post([self, id, sub_id, x = std::move(x)] {
        if (self->closing_)
          return;
        self->answered();
        if (!x) {
          self->subscriptions_.erase(*sub_id);
          return self->send(error_frame(id, x.error()));
        }
        self->send(reply_frame(
          id, "subscribe", json::object{{"subscription", *sub_id}, {"locks", to_json(x->locks)}}));
      });
    },
    [weak, sub_id](const lock_event& ev) {
      if (auto self = weak.lock())
        self->post([self, sub_id, ev] {
          if (self->subscriptions_.contains(*sub_id))
            self->send(lock_event_frame(*sub_id, ev));
        });
    },
    std::move(ctx));
  *sub_id = assigned;
  if (assigned != 0)
    subscriptions_.insert(assigned);
}

void ws_session::unsubscribe(const json::value& id, uint64_t subscription) {
  if (subscriptions_.erase(subscription) == 0)
    return send(
      error_frame(id, invalid_field("subscription", "is not a subscription of this socket")));
  ctx_->svc().unsubscribe(subscription);
  send(reply_frame(id, "unsubscribe", json::object{{"unsubscribed", true}}));
}

// --- bookkeeping --------------------------------------------------------------------------------

uint64_t ws_session::watch_lease_end(const std::string& lock) {
  std::weak_ptr<ws_session> weak = shared_from_this();
  return ctx_->svc().watch_lease(lock, [weak](const lock_event& ev) {
    if (auto self = weak.lock())
      self->post([self, ev] { self->on_lease_end(ev); });
  });
}

template <class T>
callback<T> ws_session::reply_with(const json::value& id, std::string_view op) {
  return [self = shared_from_this(), id, op](caf::expected<T> x) {
    self->post([self, id, op, x = std::move(x)] {
      self->answered();
      self->send(x ? reply_frame(id, op, net::to_json(*x)) : error_frame(id, x.error()));
    });
  };
}

template <class F>
void ws_session::post(F&& f) {
  ctx_->post_reply(ws_.get_executor(), std::forward<F>(f));
}

void ws_session::answered() {
  --pending_;
  if (draining_) {
    // The answer is queued right after this returns; look once it is.
    asio::post(ws_.get_executor(), [self = shared_from_this()] { self->finish_drain_if_done(); });
    return;
  }
  do_read(); // resumes if reading was paused for backpressure
}

void ws_session::finish_drain_if_done() {
  if (draining_ && pending_ == 0 && ws_.next_layer().idle())
    close_with(websocket::close_code::going_away, "the server is stopping");
}

void ws_session::remember_lease(const std::string& lock, uint64_t token, const std::string& owner,
                                uint64_t watch_id, bool session_bound) {
  auto [entry, added] = leases_.try_emplace(lease_key{lock, token});
  if (!added) {
    // Re-acquired by its holder: one watch is enough.
    ctx_->svc().unwatch_lease(watch_id);
    entry->second.session_bound = entry->second.session_bound || session_bound;
    return;
  }
  entry->second = held_lease{owner, watch_id, session_bound};
}

void ws_session::forget_lease(const std::string& lock, uint64_t token) {
  auto entry = leases_.find(lease_key{lock, token});
  if (entry == leases_.end())
    return;
  ctx_->svc().unwatch_lease(entry->second.watch_id);
  leases_.erase(entry);
}

void ws_session::on_lease_end(const lock_event& ev) {
  leases_.erase(lease_key{ev.name, ev.token}); // the hub dropped the watch already
  if (!closing_)
    send(lease_lost_frame(ev));
}

call_context ws_session::context(const json::value& id) const {
  return {id_ + ":" + (id.is_string() ? std::string{id.get_string()} : json::serialize(id)),
          principal_};
}

// --- writing ------------------------------------------------------------------------------------

void ws_session::send(const std::string& frame) {
  if (closing_ || !open_)
    return;
  auto& out = ws_.next_layer();
  // One frame larger than the limit may go out on its own (a big snapshot); anything that would
  // pile up behind others past the limit means the client does not keep up.
  auto queued = out.buffered();
  if (queued > 0 && queued + frame.size() > ctx_->cfg().ws_outbound_limit) {
    log_event(log_level::warn, "ws_slow_consumer",
              {{"session", id_},
               {"peer", peer_},
               {"queued_bytes", queued},
               {"limit", ctx_->cfg().ws_outbound_limit}});
    return close_with(websocket::close_code::policy_error, "outbound queue full");
  }
  out.send_text(frame);
}

void ws_session::on_frames_written(error_code ec) {
  if (ec)
    return on_closed(ec, "write");
  finish_drain_if_done();
}

// --- closing ------------------------------------------------------------------------------------

void ws_session::close_going_away() {
  asio::dispatch(ws_.get_executor(), [self = shared_from_this()] {
    if (!self->open_)
      return self->on_closed(asio::error::operation_aborted, "stop");
    self->close_with(websocket::close_code::going_away, "the server is stopping");
  });
}

void ws_session::drain() {
  asio::dispatch(ws_.get_executor(), [self = shared_from_this()] {
    if (!self->open_)
      return self->on_closed(asio::error::operation_aborted, "stop");
    self->draining_ = true;
    self->finish_drain_if_done();
  });
}

void ws_session::drop() {
  closed_ = true;
  beast::get_lowest_layer(ws_).close();
}

void ws_session::close_with(websocket::close_code code, std::string_view reason) {
  if (closing_ || closed_)
    return;
  closing_ = true;
  // What is queued behind the frames being written will not be sent.
  ws_.next_layer().discard_queued();
  ws_.async_close(websocket::close_reason{code, std::string{reason}},
                  [self = shared_from_this()](error_code ec) { self->on_closed(ec, "close"); });
  close_timer_.expires_after(close_grace);
  close_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec)
      self->on_closed(beast::error::timeout, "close");
  });
}

void ws_session::on_closed(error_code ec, std::string_view stage) {
  if (closed_)
    return;
  closed_ = true;
  closing_ = true;
  close_timer_.cancel();
  ws_.next_layer().abandon(); // Beast's writes held there are answered: nothing holds us on
  auto& svc = ctx_->svc();
  for (auto& [request_id, lock] : waiting_acquires_)
    svc.cancel(lock, request_id); // withdraw the waiter, or undo a grant nobody will read
  waiting_acquires_.clear();
  for (auto sub : subscriptions_)
    svc.unsubscribe(sub);
  subscriptions_.clear();
  for (auto& [key, held] : leases_) {
    svc.unwatch_lease(held.watch_id);
    if (held.session_bound) {
      release_request req{key.first, held.owner, key.second, true};
      svc.release(
        std::move(req), [](caf::expected<bool>) {}, context(json::value("close")));
    }
  }
  leases_.clear();
  if (open_ && ec && !is_quiet(ec))
    log_event(log_level::debug, "ws_error",
              {{"session", id_}, {"stage", stage}, {"error", ec.message()}});
  log_event(log_level::debug, "ws_close", {{"session", id_}, {"peer", peer_}});
  // The TCP connection goes now; a close handshake still in flight ends with it.
  beast::get_lowest_layer(ws_).close();
  ctx_->remove_ws(this);
}

} // namespace fencelock::net
