// client_core's leases: acquire (with the confirmation of a late grant), the renewer of each
// held lease, its loss, and release or detach.

#include <algorithm>
#include <future>

#include <boost/asio/post.hpp>

#include "client/core.hpp"
#include "client/core_helpers.hpp"

namespace fencelock::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using std::chrono::milliseconds;
using clock = renewal_schedule::clock;

std::shared_ptr<lease_state> client_core::acquire(std::string_view name, milliseconds ttl,
                                                  milliseconds wait, lease_scope scope) {
  require_user_thread("acquire");
  if (ttl <= 0ms)
    throw client_error("invalid_request", "ttl: must be positive");
  if (wait < 0ms)
    throw client_error("invalid_request", "wait: must not be negative");
  json::object req{{"op", "acquire"}, {"lock", name}, {"owner", opts_.owner},
                   {"ttlMs", ttl.count()}};
  if (wait > 0ms)
    req["waitMs"] = wait.count();
  if (scope == lease_scope::session)
    req["session"] = true;
  auto done = std::make_shared<grant_promise>();
  auto f = done->get_future();
  auto timeout = opts_.request_timeout + wait;
  asio::post(strand_, [this, req = std::move(req), timeout, scope, done]() mutable {
    // The local deadline counts from here, before the request leaves.
    auto sent = clock::now();
    conn_->request(std::move(req), timeout, [this, done, sent, scope](answer a) {
      on_granted(done, sent, scope, std::move(a));
    });
  });
  // A late grant is confirmed by one renew: a second request timeout.
  return wait_for(f, guard(timeout + opts_.request_timeout));
}

void client_core::on_granted(const std::shared_ptr<grant_promise>& done,
                             renewal_schedule::time_point sent, lease_scope scope, answer a) {
  if (!a.ok())
    return done->set_exception(std::make_exception_ptr(*a.error));
  auto granted = decode_lease(*a.result);
  if (!granted || granted->owner != opts_.owner)
    return done->set_exception(std::make_exception_ptr(
      client_error("protocol_error", "the grant is not a lease of this owner")));
  auto fraction = opts_.renew_fraction;
  auto ttl = local_ttl_of(milliseconds{granted->ttl_ms}, scope);
  if (!renewal_schedule::stale_on_arrival(ttl, fraction, sent, clock::now())) {
    auto l = std::make_shared<lease_state>(*granted, scope, ttl,
                                           renewal_schedule{ttl, fraction, sent}, strand_);
    start_renewing(l);
    return done->set_value(l);
  }
  // Granted after waiting in the queue: the server's deadline started at the hand-over, some
  // time after `sent` that we cannot know. Renew once; its send time starts a known deadline.
  auto confirm_sent = clock::now();
  conn_->request(renew_fields(granted->name, granted->owner, granted->token,
                              milliseconds{granted->ttl_ms}),
                 opts_.request_timeout,
                 [this, done, scope, fraction, confirm_sent, g = *granted](answer r) {
                   auto confirmed = r.ok() ? decode_lease(*r.result) : std::nullopt;
                   if (!confirmed || confirmed->token != g.token) {
                     if (!r.ok() && r.error->code() != "lease_lost")
                       conn_->send_only(release_fields(g.name, g.owner, g.token));
                     auto why = r.ok() ? std::string{"unreadable renew answer"}
                                       : describe(*r.error);
                     return done->set_exception(std::make_exception_ptr(client_error(
                       r.ok() ? "protocol_error" : r.error->code(),
                       "granted after waiting, but the lease could not be confirmed: " + why)));
                   }
                   auto cttl = local_ttl_of(milliseconds{confirmed->ttl_ms}, scope);
                   auto l = std::make_shared<lease_state>(
                     *confirmed, scope, cttl, renewal_schedule{cttl, fraction, confirm_sent},
                     strand_);
                   start_renewing(l);
                   done->set_value(l);
                 });
}

milliseconds client_core::local_ttl_of(milliseconds ttl, lease_scope scope) const {
  // A session-bound lease ends when the server closes the connection, which it may do a
  // session window after it last heard from us, whatever the TTL. The server heard a confirmed
  // request no earlier than we sent it, so counting that window from the send of the last
  // confirmed acquire or renew (as the TTL is) keeps the stop-at-your-own-deadline rule true
  // for a client frozen past the idle timeout. Such leases renew that much more often.
  if (scope == lease_scope::session)
    return std::min(ttl, conn_->session_window());
  return ttl;
}

void client_core::start_renewing(const std::shared_ptr<lease_state>& l) {
  l->renewing = true;
  l->publish_deadline();
  renewing_.push_back(l);
  arm(l);
}

void client_core::arm(const std::shared_ptr<lease_state>& l) {
  l->timer.expires_at(l->schedule.next_wakeup());
  l->timer.async_wait([this, l](boost::system::error_code ec) {
    if (!ec && l->renewing)
      tick(l);
  });
}

void client_core::tick(const std::shared_ptr<lease_state>& l) {
  switch (l->schedule.poll(clock::now())) {
    case renewal_schedule::action::lost:
      return lose(l, loss_cause::deadline,
                  "local deadline passed without a confirmed renewal"
                    + (l->last_failure.empty() ? std::string{} : " (" + l->last_failure + ")"));
    case renewal_schedule::action::renew:
      send_renew(l);
      break;
    case renewal_schedule::action::wait:
      break;
  }
  arm(l);
}

void client_core::send_renew(const std::shared_ptr<lease_state>& l) {
  auto sent = clock::now();
  l->schedule.renew_sent(sent);
  // An answer is useful until the deadline, however late: wait that long (within reason).
  auto left = std::chrono::ceil<milliseconds>(l->schedule.deadline() - sent);
  auto timeout = std::clamp<milliseconds>(left, 1ms, opts_.request_timeout);
  conn_->request(renew_fields(l->name, l->owner, l->token, l->ttl), timeout,
                 [this, l, sent](answer a) { on_renewed(l, sent, std::move(a)); });
}

void client_core::on_renewed(const std::shared_ptr<lease_state>& l,
                             renewal_schedule::time_point sent, answer a) {
  if (!l->renewing)
    return; // released, detached or lost meanwhile
  if (!a.ok() && a.error->code() == "lease_lost")
    return lose(l, loss_cause::refused, "renew refused: " + describe(*a.error));
  auto renewed = a.ok() ? decode_lease(*a.result) : std::nullopt;
  if (renewed && renewed->token == l->token) {
    auto ttl = std::min(milliseconds{renewed->ttl_ms}, l->local_ttl);
    l->schedule.renew_confirmed(sent, ttl);
    // Answers come in any order: an older attempt's carries an older expiresAt.
    if (renewed->expires_at_ms > l->expires_at_ms.load())
      l->expires_at_ms.store(renewed->expires_at_ms);
    l->publish_deadline();
    l->last_failure.clear();
  } else {
    // Transient (timeout, store_unavailable, no connection...): retry until the deadline.
    l->schedule.renew_failed(sent, clock::now());
    l->last_failure = "last renew: " + (a.ok() ? std::string{"unreadable answer"}
                                               : describe(*a.error));
    if (!a.ok() && a.error->code() == "connection_failed")
      conn_->connect_now(); // a lease is at stake: do not sit out the backoff
  }
  arm(l);
}

void client_core::stop_renewing(const std::shared_ptr<lease_state>& l) {
  l->renewing = false;
  l->timer.cancel();
  std::erase(renewing_, l);
}

void client_core::lose(const std::shared_ptr<lease_state>& l, loss_cause cause,
                       std::string message) {
  stop_renewing(l);
  l->schedule.mark_lost();
  // Mark it lost now (lost() turns true at once); run the callback on a later turn, with
  // nothing of ours on the stack, so that it may do what it likes with this client.
  if (auto notify = l->declare_lost(lease_loss{cause, std::move(message), clock::now()}))
    asio::post(strand_, std::move(notify));
}

void client_core::release(const std::shared_ptr<lease_state>& l) {
  require_user_thread("release");
  bool already = false;
  if (auto loss = l->end_by_holder(lease_state::standing::released, already))
    throw client_error("lease_lost", "the lease was lost before the release: " + loss->message);
  if (already)
    throw client_error("invalid_call", "the lease was released already");
  auto done = std::make_shared<std::promise<answer>>();
  auto f = done->get_future();
  auto timeout = opts_.request_timeout;
  asio::post(strand_, [this, l, timeout, done] {
    stop_renewing(l);
    conn_->request(release_fields(l->name, l->owner, l->token), timeout,
                   [done](answer a) { done->set_value(std::move(a)); });
  });
  auto a = wait_for(f, guard(timeout));
  if (!a.ok())
    throw *a.error;
}

void client_core::release_in_background(const std::shared_ptr<lease_state>& l) noexcept {
  bool already = false;
  if (l->end_by_holder(lease_state::standing::released, already) || already)
    return;
  asio::post(strand_, [this, l] {
    stop_renewing(l);
    conn_->send_only(release_fields(l->name, l->owner, l->token));
  });
}

void client_core::detach(const std::shared_ptr<lease_state>& l) noexcept {
  bool already = false;
  if (l->end_by_holder(lease_state::standing::detached, already) || already)
    return;
  asio::post(strand_, [this, l] { stop_renewing(l); });
}

} // namespace fencelock::detail
