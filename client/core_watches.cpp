// client_core's watches: subscribe (and again after a reconnect), deliver, unsubscribe.

#include <future>

#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>

#include "client/core.hpp"
#include "client/core_helpers.hpp"

namespace fencelock::detail {

namespace asio = boost::asio;
namespace json = boost::json;

std::shared_ptr<watch_state> client_core::watch(std::string_view target, bool prefix,
                                                watch_handlers h) {
  require_user_thread("watch");
  auto w = std::make_shared<watch_state>(std::string{target}, prefix, std::move(h));
  auto done = std::make_shared<std::promise<std::optional<client_error>>>();
  auto f = done->get_future();
  asio::post(strand_, [this, w, done] {
    watches_.push_back(w);
    subscribe_on_server(w, [this, w, done](std::optional<client_error> err) {
      if (err) {
        w->active = false;
        std::erase(watches_, w);
      }
      done->set_value(std::move(err));
    });
  });
  if (auto err = wait_for(f, guard(opts_.request_timeout)))
    throw *err;
  return w;
}

void client_core::subscribe_on_server(const std::shared_ptr<watch_state>& w,
                                      std::function<void(std::optional<client_error>)> done) {
  json::object req{{"op", "subscribe"}};
  req[w->prefix ? "prefix" : "lock"] = w->target;
  w->subscribing = true;
  conn_->request(std::move(req), opts_.request_timeout, [this, w, done](answer a) {
    w->subscribing = false;
    if (!a.ok())
      return done(*a.error);
    auto sid = positive(a.result->if_contains("subscription"));
    auto* locks = a.result->if_contains("locks");
    if (sid == 0 || locks == nullptr || !locks->is_array())
      return done(client_error("protocol_error", "unreadable subscribe answer"));
    if (!w->active) { // cancelled while subscribing
      conn_->send_only({{"op", "unsubscribe"}, {"subscription", sid}});
      return done(std::nullopt);
    }
    std::vector<lock_info> snapshot;
    for (const auto& v : locks->get_array())
      if (auto info = decode_status(v))
        snapshot.push_back(std::move(*info));
    w->server_id = sid;
    if (w->handlers.on_snapshot)
      w->handlers.on_snapshot(snapshot);
    done(std::nullopt);
  });
}

void client_core::unwatch(const std::shared_ptr<watch_state>& w) noexcept {
  auto stop = [this, w] {
    if (!w->active)
      return;
    w->active = false;
    std::erase(watches_, w);
    if (w->server_id != 0 && conn_->is_open())
      conn_->send_only({{"op", "unsubscribe"}, {"subscription", w->server_id}});
  };
  if (on_io_thread())
    return stop();
  std::promise<void> done;
  auto f = done.get_future();
  asio::post(strand_, [&stop, &done] {
    stop();
    done.set_value();
  });
  f.wait(); // the strand runs it promptly: it never blocks
}

} // namespace fencelock::detail
