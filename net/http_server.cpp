#include "common/log.hpp"
#include "net/http_server.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <caf/sec.hpp>

#include "net/http_session.hpp"
#include "net/poll_window.hpp"
#include "net/ws_session.hpp"

namespace fencelock::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

/// Pause before accepting again after an accept error (e.g. out of file descriptors), so that a
/// persistent error does not spin an I/O thread.
constexpr std::chrono::milliseconds accept_retry_delay{100};

/// How long stop() lets closed sessions finish their handlers before it stops the io_context.
constexpr std::chrono::seconds drain_limit{5};

/// Interval of the timer whose lateness measures the I/O loop's lag.
constexpr std::chrono::milliseconds lag_probe_interval{100};

/// What a connection beyond max-connections reads before it is closed.
constexpr std::string_view too_many_connections =
  "HTTP/1.1 503 Service Unavailable\r\nServer: fencelock\r\nContent-Type: application/json\r\n"
  "Retry-After: 1\r\nConnection: close\r\nContent-Length: 68\r\n\r\n"
  "{\"error\":\"overloaded\",\"message\":\"too many connections; retry later\"}";

/// Returns "host:port", bracketing IPv6 literals.
std::string address_text(const std::string& host, uint16_t port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

} // namespace

struct http_server::impl {
  impl(service& svc, const config& cfg, std::shared_ptr<authenticator> auth,
       std::shared_ptr<tls_credentials> tls)
    : ctx(std::make_shared<server_context>(svc, cfg, std::move(auth), std::move(tls))),
      acceptor(asio::make_strand(ctx->ioc())), retry_timer(acceptor.get_executor()),
      lag_timer(asio::make_strand(ctx->ioc())) {
  }

  caf::error start();
  void stop();

  /// Opens, binds and listens on the first endpoint of host:port that allows it.
  error_code listen();
  error_code listen_on(const tcp::endpoint& endpoint);
  /// Runs the I/O loop until it stops, polling for up to `poll_limit` before each sleep.
  void run_io_thread(std::chrono::microseconds poll_limit);
  /// Runs handlers until the io_context stops, polling as `window` says before each sleep.
  void run_polling(poll_window& window);
  /// Waits until every I/O thread left run(), or until `drain_limit`; returns whether they did.
  bool wait_for_drain();

  void do_accept();
  void on_accept(error_code ec, tcp::socket socket);
  /// Registers `session` for stop(); returns false when the server is stopping.
  bool track(const std::shared_ptr<http_session>& session);
  /// Answers a connection beyond max-connections with 503 and closes it.
  void refuse(tcp::socket socket);
  /// Measures how late the I/O loop runs a timer, and reports it to the service.
  void probe_lag(asio::steady_timer::time_point due);

  // Declared first, destroyed last: the acceptor and timer below live on its io_context.
  std::shared_ptr<server_context> ctx;
  // Keeps run() going until stop() has drained the sessions. Without it the loop ends the moment
  // stop() closes the acceptor while no session has an operation pending (one lingering after
  // its last response, one waiting for the service), and whatever is posted later (a drain, the
  // service's answer) is never run: the answer is lost and stop() waits out drain-timeout-ms.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  asio::steady_timer lag_timer;
  std::atomic<bool> probe_stopped{false};
  std::vector<std::thread> threads;
  uint16_t bound_port = 0;
  bool started = false; // only the owner's thread (start/stop) touches it

  std::mutex mutex; // guards everything below
  std::condition_variable drained;
  std::size_t threads_running = 0;
  bool stopping = false;
  std::vector<std::weak_ptr<http_session>> sessions;
  std::size_t prune_at = 64;
};

caf::error http_server::impl::start() {
  const auto& cfg = ctx->cfg();
  auto where = address_text(cfg.host, cfg.port);
  if (started || stopping)
    return caf::make_error(caf::sec::invalid_argument,
                           "http server on " + where + " was already started");
  if (auto ec = listen())
    return caf::make_error(caf::sec::invalid_argument,
                           "cannot listen on " + where + ": " + ec.message());
  keep_running.emplace(ctx->ioc().get_executor());
  do_accept();
  probe_lag(asio::steady_timer::clock_type::now() + lag_probe_interval);
  auto count = std::max<uint32_t>(cfg.io_threads, 1);
  try {
    for (uint32_t i = 0; i < count; ++i) {
      {
        std::lock_guard<std::mutex> guard{mutex};
        ++threads_running;
      }
      // One thread polls before it sleeps (net/poll_window.hpp); more would take turns for the
      // same cores.
      auto poll_limit = i == 0 ? std::chrono::microseconds{cfg.io_poll_us}
                               : std::chrono::microseconds::zero();
      threads.emplace_back([this, poll_limit] { run_io_thread(poll_limit); });
    }
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> guard{mutex};
      --threads_running; // the thread that failed to start
    }
    started = true; // so that stop() winds down the threads that did start
    stop();
    return caf::make_error(caf::sec::invalid_argument,
                           "cannot start I/O threads for " + where + ": " + e.what());
  }
  started = true;
  return caf::none;
}

error_code http_server::impl::listen() {
  const auto& cfg = ctx->cfg();
  error_code ec;
  tcp::resolver resolver{ctx->ioc()};
  auto endpoints = resolver.resolve(cfg.host, std::to_string(cfg.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec)
    return ec;
  ec = asio::error::host_not_found; // when the name resolves to nothing
  for (const auto& entry : endpoints) {
    ec = listen_on(entry.endpoint());
    if (!ec)
      return {};
    error_code ignored;
    acceptor.close(ignored);
  }
  return ec;
}

error_code http_server::impl::listen_on(const tcp::endpoint& endpoint) {
  error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec)
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    acceptor.bind(endpoint, ec);
  if (!ec)
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec)
    bound_port = acceptor.local_endpoint(ec).port();
  return ec;
}

void http_server::impl::run_io_thread(std::chrono::microseconds poll_limit) {
  poll_window window{poll_limit};
  for (;;) {
    try {
      if (poll_limit > std::chrono::microseconds::zero())
        run_polling(window);
      else
        ctx->ioc().run();
      break;
    } catch (const std::exception& e) {
      // Handlers do not throw by design; if one does (bad_alloc), keep serving the others.
      log_event(log_level::error, "http_io_error", {{"error", e.what()}});
    }
  }
  {
    std::lock_guard<std::mutex> guard{mutex};
    --threads_running;
  }
  drained.notify_all();
}

void http_server::impl::run_polling(poll_window& window) {
  using clock = std::chrono::steady_clock;
  auto& ioc = ctx->ioc();
  while (!ioc.stopped()) {
    if (ioc.poll() > 0)
      continue; // ran what was ready; look again before deciding to wait
    auto began = clock::now();
    auto until = began + window.current();
    bool found = false;
    while (!found && clock::now() < until) {
      found = ioc.poll() > 0;
      if (!found)
        sched_yield(); // a worker woken onto this core runs before the poll goes on
    }
    if (found)
      continue; // polling paid off: the window stays
    if (ioc.run_one() == 0)
      return; // stopped
    window.slept(clock::now() - began);
  }
}

void http_server::impl::do_accept() {
  // Over several I/O threads each connection gets a strand of its own. One thread runs one
  // handler at a time anyway: there a strand would only add its mutex and the reference counts
  // of its copies to every completion (~9 % of the I/O thread under load).
  auto executor = ctx->cfg().io_threads > 1 ? asio::any_io_executor{asio::make_strand(ctx->ioc())}
                                            : asio::any_io_executor{ctx->ioc().get_executor()};
  acceptor.async_accept(executor, beast::bind_front_handler(&impl::on_accept, this));
}

void http_server::impl::on_accept(error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open())
    return; // stop() closed the acceptor
  if (ec) {
    log_event(log_level::debug, "accept_error", {{"error", ec.message()}});
    retry_timer.expires_after(accept_retry_delay);
    retry_timer.async_wait([this](error_code timer_ec) {
      if (!timer_ec && acceptor.is_open())
        do_accept();
    });
    return;
  }
  if (ctx->connections() >= ctx->cfg().max_connections) {
    refuse(std::move(socket));
    return do_accept();
  }
  auto session = std::make_shared<http_session>(std::move(socket), ctx);
  if (track(session))
    session->run();
  do_accept();
}

void http_server::impl::refuse(tcp::socket socket) {
  log_event(log_level::debug, "connection_refused",
            {{"max_connections", ctx->cfg().max_connections}});
  auto refused = std::make_shared<tcp::socket>(std::move(socket));
  // A constant answer, written without reading the request: the client learns why, then EOF.
  asio::async_write(*refused, asio::buffer(too_many_connections),
                    [refused](error_code, std::size_t) {
                      error_code ignored;
                      refused->shutdown(tcp::socket::shutdown_both, ignored);
                      refused->close(ignored);
                    });
}

void http_server::impl::probe_lag(asio::steady_timer::time_point due) {
  lag_timer.expires_at(due);
  lag_timer.async_wait([this, due](error_code ec) {
    // A wait that completed just before stop() cancelled it still runs: check the flag too.
    if (ec || probe_stopped.load())
      return; // stopped
    auto now = asio::steady_timer::clock_type::now();
    auto lag = std::chrono::duration_cast<std::chrono::microseconds>(now - due);
    ctx->svc().report_io_lag(lag);
    probe_lag(now + lag_probe_interval);
  });
}

bool http_server::impl::track(const std::shared_ptr<http_session>& session) {
  std::lock_guard<std::mutex> guard{mutex};
  if (stopping)
    return false;
  if (sessions.size() >= prune_at) {
    std::erase_if(sessions, [](const auto& weak) { return weak.expired(); });
    prune_at = std::max<std::size_t>(64, 2 * sessions.size());
  }
  sessions.push_back(session);
  return true;
}

bool http_server::impl::wait_for_drain() {
  std::unique_lock<std::mutex> guard{mutex};
  return drained.wait_for(guard, drain_limit, [this] { return threads_running == 0; });
}

void http_server::impl::stop() {
  std::vector<std::weak_ptr<http_session>> open_sessions;
  {
    std::lock_guard<std::mutex> guard{mutex};
    if (!started || stopping)
      return;
    stopping = true; // from here on, track() turns new connections away
    open_sessions.swap(sessions);
  }
  asio::post(acceptor.get_executor(), [this] {
    error_code ignored;
    acceptor.close(ignored);
    retry_timer.cancel();
  });
  probe_stopped = true;
  asio::post(lag_timer.get_executor(), [this] { lag_timer.cancel(); });
  // Graceful first: waiters are answered shutting_down, every other request in progress is
  // answered, then each connection closes (WebSockets with 1001, releasing their session-bound
  // leases; other leases live on). Whatever is still open after drain-timeout-ms is cut.
  ctx->svc().drain();
  auto websockets = ctx->stop_ws();
  for (const auto& weak : open_sessions)
    if (auto session = weak.lock())
      session->drain();
  for (const auto& session : websockets)
    session->drain();
  auto drain_until =
    std::chrono::steady_clock::now() + std::chrono::milliseconds{ctx->cfg().drain_timeout_ms};
  while (ctx->connections() > 0 && std::chrono::steady_clock::now() < drain_until)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  // Late service replies are dropped from here, never queued on an io_context about to stop.
  ctx->close_reply_gate();
  if (ctx->connections() > 0) {
    log_event(log_level::warn, "drain_timeout",
              {{"open_connections", ctx->connections()},
               {"drain_timeout_ms", ctx->cfg().drain_timeout_ms}});
    for (const auto& weak : open_sessions)
      if (auto session = weak.lock())
        session->close();
    for (const auto& session : websockets)
      session->close_going_away();
    // Cut sessions still run their last handlers (withdrawing waiters, releasing session-bound
    // leases); run() returns once they did, or the limit passes.
    keep_running.reset();
    if (!wait_for_drain())
      log_event(log_level::warn, "http_stop_forced", {{"drain_limit_s", drain_limit.count()}});
  }
  // Every session has ended: what may be left on the loop are timers and aborted operations of
  // closed sockets, whose handlers still hold their sessions.
  ctx->ioc().stop();
  keep_running.reset();
  for (auto& thread : threads)
    if (thread.joinable())
      thread.join();
  threads.clear();
  ctx->destroy_pending_handlers();
}

http_server::http_server(service& svc, const config& cfg, std::shared_ptr<authenticator> auth,
                         std::shared_ptr<tls_credentials> tls)
  : impl_(std::make_unique<impl>(svc, cfg, std::move(auth), std::move(tls))) {
}

http_server::~http_server() {
  stop();
}

caf::error http_server::start() {
  return impl_->start();
}

uint16_t http_server::port() const noexcept {
  return impl_->bound_port;
}

void http_server::stop() {
  impl_->stop();
}

} // namespace fencelock::net
