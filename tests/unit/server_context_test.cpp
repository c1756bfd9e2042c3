// The HTTP server's shared context at stop: no handler left on its io_context keeps a session,
// and through it the context itself, alive (the sanitizer's leak report of a drained server).

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "fencelock/config.hpp"
#include "fencelock/messages.hpp"
#include "fencelock/service.hpp"
#include "net/server_context.hpp"

using namespace fencelock;
using namespace std::chrono_literals;
namespace asio = boost::asio;

TEST_CASE("a stopped server context destroys the handlers left on its io_context",
          "[unit][net]") {
  caf::actor_system_config sys_cfg;
  add_message_types(sys_cfg);
  caf::actor_system sys{sys_cfg};
  config cfg;
  service svc{sys, cfg}; // never started: the context only keeps a reference to it
  auto ctx = std::make_shared<net::server_context>(svc, cfg, nullptr, nullptr);
  std::weak_ptr<net::server_context> ctx_alive = ctx;

  // A session as the server has them: it holds the context, and its handlers hold it.
  struct session {
    std::shared_ptr<net::server_context> ctx;
    asio::steady_timer timer;
  };
  auto s = std::make_shared<session>(session{ctx, asio::steady_timer{ctx->ioc(), 1h}});
  std::weak_ptr<session> session_alive = s;
  asio::post(ctx->ioc(), [s] {});                      // queued, never run
  s->timer.async_wait([s](boost::system::error_code) {}); // waiting, never due
  s.reset();
  ctx->ioc().stop(); // as the server's stop() does before it joins its threads
  ctx.reset();
  REQUIRE_FALSE(session_alive.expired()); // the handlers hold it: the cycle this test is about

  ctx_alive.lock()->destroy_pending_handlers();
  CHECK(session_alive.expired());
  CHECK(ctx_alive.expired());
}
