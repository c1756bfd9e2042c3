#include "client/connection.hpp"

#include <fcntl.h>

#include <algorithm>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace fencelock::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto first_backoff = 100ms;
constexpr auto max_backoff = 2000ms;
// Bounds the polite close at shutdown: a frozen server must not hold the process up.
constexpr auto close_limit = 1000ms;
// Snapshots of a busy prefix can be large; the server's own frame limit applies to requests.
constexpr size_t max_incoming = 16 << 20;

} // namespace

// One attempt's socket and read buffer. Handlers hold it by shared_ptr, so it outlives a drop
// until its cancelled operations have completed; `spare` keeps the frames of a write that was
// in flight at the drop.
struct connection::link {
  using plain = websocket::stream<beast::tcp_stream>;
  using secure = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

  /// A socket for `tls` (null: plain TCP).
  link(const executor& ex, asio::ssl::context* tls)
    : ws(tls == nullptr ? std::variant<plain, secure>{std::in_place_type<plain>, ex}
                        : std::variant<plain, secure>{std::in_place_type<secure>, ex, *tls}) {
  }

  /// Calls `f` with the WebSocket stream, whichever it is.
  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), ws);
  }

  beast::tcp_stream& tcp() {
    return visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); });
  }

  std::variant<plain, secure> ws;
  beast::flat_buffer buffer;
  std::deque<std::string> spare;
  std::vector<tcp::endpoint> addresses;      // what async_connect tries, kept for its duration
  websocket::response_type upgrade_response; // the server's answer to the upgrade
};

connection::connection(executor ex, std::vector<endpoint> endpoints,
                       std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds idle_timeout, std::string bearer_token,
                       std::shared_ptr<asio::ssl::context> tls, hooks h)
  : ex_(std::move(ex)), endpoints_(std::move(endpoints)), connect_timeout_(connect_timeout),
    idle_timeout_(idle_timeout), bearer_token_(std::move(bearer_token)), tls_(std::move(tls)),
    hooks_(std::move(h)),
    resolver_(ex_), backoff_timer_(ex_), backoff_(first_backoff) {
}

void connection::request(json::object fields, std::chrono::milliseconds timeout,
                         answer_handler handler) {
  if (state_ == state::closed || state_ == state::backoff) {
    auto why = state_ == state::closed ? "client_closed" : "connection_failed";
    auto msg = state_ == state::closed ? "the client is closed"
                                       : "not connected (reconnecting): " + last_failure_;
    // Answer on a later turn: the caller may not expect its handler to run inside request().
    asio::post(ex_, [handler = std::move(handler), a = answer::failure(why, msg)]() mutable {
      handler(std::move(a));
    });
    return;
  }
  auto id = next_id_++;
  json::object frame;
  frame["id"] = id;
  for (auto& [key, value] : fields)
    frame[key] = std::move(value);
  auto timer = std::make_unique<asio::steady_timer>(ex_);
  timer->expires_after(timeout);
  timer->async_wait([this, id](error_code ec) {
    if (!ec)
      on_timeout(id);
  });
  pending_.emplace(id, pending{std::move(handler), std::move(timer)});
  queue_frame(json::serialize(frame));
}

void connection::send_only(json::object fields) {
  if (state_ != state::open)
    return;
  json::object frame;
  frame["id"] = next_id_++;
  for (auto& [key, value] : fields)
    frame[key] = std::move(value);
  queue_frame(json::serialize(frame));
}

void connection::connect_now() {
  if (state_ == state::idle || state_ == state::backoff) {
    backoff_timer_.cancel();
    start_connect();
  }
}

void connection::queue_frame(std::string frame) {
  switch (state_) {
    case state::open:
      out_.push_back(std::move(frame));
      if (!writing_)
        do_write();
      return;
    case state::connecting:
      waiting_.push_back(std::move(frame));
      return;
    case state::idle:
      waiting_.push_back(std::move(frame));
      start_connect();
      return;
    case state::backoff:
    case state::closed:
      return; // request() answered already
  }
}

void connection::start_connect() {
  state_ = state::connecting;
  auto gen = ++gen_;
  link_ = std::make_shared<link>(ex_, current().tls ? tls_.get() : nullptr);
  // A numeric host needs no resolver (whose getaddrinfo runs on a thread of its own).
  error_code ec;
  auto addr = asio::ip::make_address(current().host, ec);
  if (!ec) {
    auto port = static_cast<uint16_t>(std::stoi(current().port)); // checked by parse_endpoint
    std::vector<tcp::endpoint> one{tcp::endpoint{addr, port}};
    asio::post(ex_, [this, gen, one = std::move(one)] { on_resolved(gen, one); });
    return;
  }
  resolver_.async_resolve(current().host, current().port,
                          [this, gen](error_code rec, const tcp::resolver::results_type& r) {
                            if (gen != gen_)
                              return;
                            if (rec)
                              return fail_link("cannot resolve " + current().host + ": "
                                               + rec.message());
                            on_resolved(gen, std::vector<tcp::endpoint>(r.begin(), r.end()));
                          });
}

void connection::on_resolved(uint64_t gen, const std::vector<tcp::endpoint>& addresses) {
  if (gen != gen_)
    return;
  auto l = link_;
  l->addresses = addresses;
  auto& tcp_layer = l->tcp();
  tcp_layer.expires_after(connect_timeout_);
  tcp_layer.async_connect(l->addresses, [this, gen, l](error_code ec, const tcp::endpoint&) {
    if (gen != gen_)
      return;
    if (ec)
      return fail_link("cannot connect to " + current().host_header() + ": " + ec.message());
    on_tcp_connected(gen);
  });
}

void connection::on_tcp_connected(uint64_t gen) {
  auto l = link_;
  auto& tcp_layer = l->tcp();
  // A child process (fencelock run's command) must not inherit the connection: it would keep
  // a session-bound lease's socket open after we are gone.
  ::fcntl(tcp_layer.socket().native_handle(), F_SETFD, FD_CLOEXEC);
  tcp_layer.socket().set_option(tcp::no_delay{true});
  auto* secure = std::get_if<link::secure>(&l->ws);
  if (secure == nullptr) {
    tcp_layer.expires_never(); // the websocket timeouts take over
    return upgrade(gen);
  }
  // TLS first, within the connect timeout still running: the server's name goes out (SNI) and
  // its certificate must name it.
  auto& tls = secure->next_layer();
  const auto& host = current().host;
  // SSL_set_tlsext_host_name, spelt out: the macro's C cast breaks -Wold-style-cast.
  if (SSL_ctrl(tls.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(host.c_str()))
      != 1)
    return fail_link("TLS to " + current().host_header() + ": cannot set the server name");
  tls.set_verify_callback(asio::ssl::host_name_verification(host));
  tls.async_handshake(asio::ssl::stream_base::client, [this, gen, l](error_code ec) {
    if (gen != gen_)
      return;
    if (ec)
      return fail_link("TLS handshake with " + current().host_header() + " failed: "
                       + ec.message());
    l->tcp().expires_never();
    upgrade(gen);
  });
}

void connection::upgrade(uint64_t gen) {
  auto l = link_;
  websocket::stream_base::timeout opts{};
  opts.handshake_timeout = connect_timeout_;
  opts.idle_timeout = idle_timeout_;
  opts.keep_alive_pings = true;
  l->visit([&](auto& ws) {
    ws.set_option(opts);
    ws.set_option(websocket::stream_base::decorator([this](websocket::request_type& req) {
      req.set(beast::http::field::user_agent, "fencelock-client");
      if (!bearer_token_.empty())
        req.set(beast::http::field::authorization, "Bearer " + bearer_token_);
    }));
    ws.read_message_max(max_incoming);
    ws.text(true);
    ws.async_handshake(
      l->upgrade_response, current().host_header(), current().target,
      [this, gen, l](error_code ec) {
        if (gen != gen_)
          return;
        if (ec == websocket::error::upgrade_declined
            && l->upgrade_response.result() == beast::http::status::unauthorized)
          return fail_link("WebSocket upgrade at " + current().host_header() + current().target
                             + " refused: 401 unauthenticated: "
                             + (bearer_token_.empty() ? "the server wants a bearer token"
                                                      : "the server refused the bearer token"),
                           "unauthenticated");
        if (ec)
          return fail_link("WebSocket upgrade at " + current().host_header() + current().target
                           + " failed: " + ec.message());
        on_upgraded(gen);
      });
  });
}

void connection::on_upgraded(uint64_t) {
  state_ = state::open;
  backoff_ = first_backoff;
  failed_in_round_ = 0;
  round_failures_.clear();
  round_code_.clear();
  for (auto& frame : waiting_)
    out_.push_back(std::move(frame));
  waiting_.clear();
  if (!out_.empty() && !writing_)
    do_write();
  do_read();
  if (hooks_.opened)
    hooks_.opened();
}

void connection::do_read() {
  auto l = link_;
  auto gen = gen_;
  l->visit([&](auto& ws) {
    ws.async_read(l->buffer, [this, gen, l](error_code ec, size_t) { on_read(gen, ec); });
  });
}

void connection::on_read(uint64_t gen, error_code ec) {
  if (gen != gen_)
    return;
  if (ec)
    return fail_link(ec == websocket::error::closed ? "the server closed the connection"
                                                    : "connection lost: " + ec.message());
  auto text = beast::buffers_to_string(link_->buffer.data());
  link_->buffer.consume(link_->buffer.size());
  on_frame(text);
  // on_frame may run owner code that shut us down or dropped the link.
  if (gen == gen_ && state_ == state::open)
    do_read();
}

void connection::on_frame(std::string_view text) {
  error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object())
    return; // not ours to repair; the request it answers times out
  const auto& frame = v.get_object();
  auto type = frame_type(frame);
  if (type == "reply" || type == "granted" || type == "error") {
    auto id = frame_id(frame);
    if (!id)
      return; // an error about a frame the server could not read: nothing to match
    auto it = pending_.find(*id);
    if (it == pending_.end())
      return; // timed out already
    auto p = std::move(it->second);
    pending_.erase(it);
    p.timer->cancel();
    p.handler(decode_answer(frame));
    return;
  }
  if (type == "hello") {
    server_idle_timeout_ = hello_idle_timeout(frame);
    return;
  }
  if (hooks_.push)
    hooks_.push(frame);
}

void connection::do_write() {
  writing_ = true;
  auto l = link_;
  auto gen = gen_;
  l->visit([&](auto& ws) {
    ws.async_write(asio::buffer(out_.front()),
                   [this, gen, l](error_code ec, size_t) { on_write(gen, ec); });
  });
}

void connection::on_write(uint64_t gen, error_code ec) {
  if (gen != gen_)
    return;
  if (ec)
    return fail_link("connection lost while writing: " + ec.message());
  out_.pop_front();
  if (out_.empty())
    writing_ = false;
  else
    do_write();
}

void connection::on_timeout(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end())
    return;
  auto p = std::move(it->second);
  pending_.erase(it);
  p.handler(answer::failure("timeout", "no answer from " + current().host_header() + " in time"));
}

void connection::fail_link(const std::string& why, const std::string& code) {
  if (state_ != state::open && state_ != state::connecting)
    return;
  if (code != "connection_failed" && round_code_.empty())
    round_code_ = code;
  bool was_open = state_ == state::open;
  ++gen_;
  server_idle_timeout_.reset();
  if (link_) {
    link_->spare = std::move(out_); // a write in flight still points into these
    link_->tcp().close();
    link_.reset();
  }
  resolver_.cancel();
  out_.clear();
  writing_ = false;
  // The next endpoint is tried next, whether at once (below) or after the backoff.
  current_ = (current_ + 1) % endpoints_.size();
  if (!was_open) {
    round_failures_ += (round_failures_.empty() ? "" : "; ") + why;
    if (++failed_in_round_ < endpoints_.size()) {
      // Another endpoint is left in this round: try it now. Requests and the frames waiting for
      // a connection stay; each request's own timeout still bounds it.
      start_connect();
      return;
    }
  }
  last_failure_ = was_open ? why : std::exchange(round_failures_, {});
  auto failure_code = std::exchange(round_code_, {});
  if (failure_code.empty())
    failure_code = "connection_failed";
  failed_in_round_ = 0;
  waiting_.clear();
  // Decide before anyone hears of it: a failed request's handler may make a new one, which
  // must see backoff (fail fast), not idle (connect at once, in a loop).
  if (hooks_.wanted && hooks_.wanted()) {
    state_ = state::backoff;
    backoff_timer_.expires_after(backoff_);
    backoff_ = std::min<std::chrono::milliseconds>(backoff_ * 2, max_backoff);
    backoff_timer_.async_wait([this](error_code ec) {
      if (ec || state_ != state::backoff)
        return;
      if (hooks_.wanted && hooks_.wanted())
        start_connect();
      else
        state_ = state::idle;
    });
  } else {
    state_ = state::idle;
  }
  fail_all(failure_code, last_failure_);
  if (was_open && hooks_.dropped)
    hooks_.dropped();
}

void connection::fail_all(const std::string& code, const std::string& why) {
  auto failed = std::exchange(pending_, {});
  for (auto& [id, p] : failed) {
    p.timer->cancel();
    p.handler(answer::failure(code, why));
  }
}

void connection::shutdown(std::function<void()> done) {
  auto l = link_;
  bool open = state_ == state::open;
  state_ = state::closed;
  ++gen_;
  link_.reset();
  backoff_timer_.cancel();
  resolver_.cancel();
  waiting_.clear();
  fail_all("client_closed", "the client is closed");
  if (!l) {
    done();
    return;
  }
  if (!open) {
    l->tcp().close();
    done();
    return;
  }
  l->spare = std::move(out_);
  out_.clear();
  auto timer = std::make_shared<asio::steady_timer>(ex_, close_limit);
  timer->async_wait([l](error_code ec) {
    if (!ec)
      l->tcp().close();
  });
  // A write may be in flight: Beast allows one close alongside it, and orders the frames.
  l->visit([&](auto& ws) {
    ws.async_close(websocket::close_code::normal, [l, timer, done = std::move(done)](error_code) {
      timer->cancel();
      l->tcp().close();
      done();
    });
  });
}

} // namespace fencelock::detail
