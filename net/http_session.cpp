#include "net/http_session.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <string_view>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/json/serialize.hpp>

#include "common/log.hpp"
#include "net/dashboard.hpp"
#include "net/error_mapping.hpp"
#include "net/response_bytes.hpp"
#include "net/ws_session.hpp"

namespace fencelock::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::milliseconds;

namespace {

/// Largest request header; Beast's default for requests. Larger headers get 431.
constexpr uint32_t header_limit = 8 * 1024;

/// Pipelined bytes a session buffers on top of body_limit while a call is pending; beyond that
/// it stops reading (and so stops noticing a client that goes away).
constexpr std::size_t pipeline_slack = 8 * 1024;

/// Bytes a watch read asks for at a time.
constexpr std::size_t watch_chunk = 1024;

/// How long a closing session drains what the client still sends, so that the kernel does not
/// answer unread data with a reset that could destroy the response before the client reads it.
constexpr milliseconds linger_time{1'000};

constexpr std::string_view continue_response = "HTTP/1.1 100 Continue\r\n\r\n";

/// Returns whether `ec` means the request itself is not valid HTTP (a 400, not a lost client).
bool is_malformed_http(const beast::error_code& ec) {
  if (ec.category() != http::make_error_code(http::error::bad_target).category())
    return false;
  switch (static_cast<http::error>(ec.value())) {
    case http::error::bad_line_ending:
    case http::error::bad_method:
    case http::error::bad_target:
    case http::error::bad_version:
    case http::error::bad_field:
    case http::error::bad_value:
    case http::error::bad_content_length:
    case http::error::bad_transfer_encoding:
    case http::error::bad_chunk:
    case http::error::bad_chunk_extension:
    case http::error::bad_obs_fold:
    case http::error::multiple_content_length:
    case http::error::unexpected_body:
      return true;
    default: // end_of_stream, partial_message, ...: the client went away
      return false;
  }
}

/// Returns whether `ec` is an ordinary end of a connection, not worth a log line.
bool is_quiet(const beast::error_code& ec) {
  return ec == asio::error::operation_aborted || ec == asio::error::eof
         || ec == http::error::end_of_stream;
}

} // namespace

http_session::http_session(asio::ip::tcp::socket&& socket, std::shared_ptr<server_context> ctx)
  : ctx_(std::move(ctx)), strand_(socket.get_executor()), stream_(std::move(socket)),
    rate_(ctx_->cfg().max_request_rate) {
  ctx_->count_http_session(1);
  error_code ec;
  auto peer = stream_.next_layer().socket().remote_endpoint(ec);
  if (!ec)
    peer_ = peer.address().to_string(ec) + ":" + std::to_string(peer.port());
}

http_session::~http_session() {
  ctx_->count_http_session(-1);
}

void http_session::run() {
  // The socket's executor is the session's strand: start there.
  asio::dispatch(strand_, beast::bind_front_handler(&http_session::start, shared_from_this()));
}

void http_session::start() {
  if (ctx_->tls())
    return do_detect_tls();
  do_read_header();
}

void http_session::close() {
  asio::post(strand_, beast::bind_front_handler(&http_session::close_now, shared_from_this()));
}

void http_session::drain() {
  asio::post(strand_, [self = shared_from_this()] {
    self->draining_ = true;
    self->keep_alive_ = false;
    // An idle keep-alive connection is closed. One whose request has begun is answered: its
    // client may have sent all of it before the drain (the read just had not run yet), and
    // closing would reset the connection with the request unanswered.
    if (self->phase_ == phase::reading && !self->request_begun())
      self->close_now();
  });
}

// --- TLS ---------------------------------------------------------------------------------------

void http_session::do_detect_tls() {
  // The handshake has the header timeout, as a request would.
  stream_.next_layer().expires_after(milliseconds{ctx_->cfg().header_timeout_ms});
  beast::async_detect_ssl(
    stream_.next_layer(), buffer_,
    beast::bind_front_handler(&http_session::on_detect_tls, shared_from_this()));
}

void http_session::on_detect_tls(error_code ec, bool tls) {
  if (phase_ == phase::closed)
    return;
  if (ec)
    return fail(ec, "detect TLS");
  if (!tls) {
    // Plain HTTP on the TLS port: answered in plain HTTP, which the client can read, and closed.
    log_event(log_level::info, "plain_http_on_tls_port", {{"peer", peer_}});
    version_ = 11;
    keep_alive_ = false;
    head_ = false;
    request_id_ = make_request_id();
    return send(error_reply(http::status::bad_request, "invalid_request",
                            "this port speaks TLS: use https:// (or wss://)"));
  }
  stream_.start_tls(ctx_->tls()->current());
  stream_.tls().async_handshake(
    asio::ssl::stream_base::server, buffer_.data(),
    beast::bind_front_handler(&http_session::on_handshake, shared_from_this()));
}

void http_session::on_handshake(error_code ec, std::size_t bytes_used) {
  if (phase_ == phase::closed)
    return;
  buffer_.consume(bytes_used);
  if (ec) {
    // A client that does not trust our certificate, has none to show (mutual TLS), or
    // offers nothing we accept: worth a line, since only the client sees why otherwise.
    log_event(log_level::info, "tls_handshake_failed", {{"peer", peer_}, {"error", ec.message()}});
    return abandon();
  }
  certificate_name_ = client_certificate_name(stream_);
  do_read_header();
}

// --- reading a request -------------------------------------------------------------------------

void http_session::do_read_header() {
  if (phase_ == phase::closed)
    return;
  phase_ = phase::reading;
  parser_.emplace();
  parser_->header_limit(header_limit);
  parser_->body_limit(ctx_->cfg().body_limit);
  // Also the keep-alive idle limit: the clock runs from the end of the previous response.
  stream_.next_layer().expires_after(milliseconds{ctx_->cfg().header_timeout_ms});
  http::async_read_header(
    stream_, buffer_, *parser_,
    beast::bind_front_handler(&http_session::on_read_header, shared_from_this()));
}

void http_session::on_read_header(error_code ec, std::size_t) {
  if (phase_ == phase::closed)
    return;
  if (ec)
    return on_read_error(ec);
  const auto& req = parser_->get();
  bool expects_continue = req.version() == 11 && !parser_->is_done()
                          && beast::iequals(req[http::field::expect], "100-continue");
  if (expects_continue)
    return do_write_continue();
  do_read_body();
}

void http_session::do_write_continue() {
  stream_.next_layer().expires_after(milliseconds{ctx_->cfg().body_timeout_ms});
  asio::async_write(
    stream_, asio::buffer(continue_response.data(), continue_response.size()),
    beast::bind_front_handler(&http_session::on_write_continue, shared_from_this()));
}

void http_session::on_write_continue(error_code ec, std::size_t) {
  if (phase_ == phase::closed)
    return;
  if (ec)
    return fail(ec, "write 100-continue");
  do_read_body();
}

void http_session::do_read_body() {
  // The body usually arrives with the header, so it is parsed from the buffer right here: an
  // asynchronous read would find it there too, but could only complete through the scheduler.
  parser_->eager(true);
  while (!parser_->is_done() && buffer_.size() > 0) {
    error_code ec;
    auto used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more)
      break;
    if (ec)
      return on_read_error(ec);
    if (used == 0)
      break;
  }
  if (parser_->is_done())
    return handle_request();
  stream_.next_layer().expires_after(milliseconds{ctx_->cfg().body_timeout_ms});
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&http_session::on_read_body, shared_from_this()));
}

void http_session::on_read_body(error_code ec, std::size_t) {
  if (phase_ == phase::closed)
    return;
  if (ec)
    return on_read_error(ec);
  handle_request();
}

void http_session::on_read_error(error_code ec) {
  if (ec == http::error::body_limit)
    return reply_and_close(
      error_reply(http::status::payload_too_large, "payload_too_large",
                  "the body exceeds " + std::to_string(ctx_->cfg().body_limit) + " bytes"));
  if (ec == http::error::header_limit)
    return reply_and_close(
      error_reply(http::status::request_header_fields_too_large, "headers_too_large",
                  "the request header exceeds " + std::to_string(header_limit) + " bytes"));
  if (is_malformed_http(ec) && !stream_.secure() && looks_like_tls(unread())) {
    // A TLS client on a plain port: it cannot read an HTTP answer, so none is sent.
    log_event(log_level::info, "tls_on_plain_port", {{"peer", peer_}});
    return abandon();
  }
  if (is_malformed_http(ec))
    return reply_and_close(
      error_reply(http::status::bad_request, "invalid_request", "malformed HTTP request"));
  fail(ec, "read");
}

// --- calling the service -----------------------------------------------------------------------

void http_session::handle_request() {
  auto req = parser_->release();
  version_ = req.version();
  keep_alive_ = req.keep_alive() && !draining_; // a request read in a drain is the last one
  head_ = req.method() == http::verb::head;
  request_id_ = request_id_of(req);
  if (beast::websocket::is_upgrade(req))
    return upgrade(std::move(req));
  if (!rate_.admit()) {
    auto limited = error_reply(http::status::too_many_requests, "rate_limited",
                               "more than " + std::to_string(ctx_->cfg().max_request_rate)
                                 + " requests per second on this connection");
    limited.retry_after_s = 1;
    return send(std::move(limited));
  }
  if (auto page = dashboard_route(req.method(), req.target(), req[http::field::if_none_match],
                                  ctx_->cfg().dashboard))
    return send(std::move(*page));
  std::shared_ptr<const principal> who;
  if (const auto* auth = ctx_->auth()) {
    who = auth->identify(bearer_token(req[http::field::authorization]), certificate_name_);
    if (!who && needs_credentials(req.target(), ctx_->cfg())) {
      log_denied(unauthenticated_error(), request_id_, "", peer_);
      return send(unauthenticated_reply());
    }
  }
  auto result = route(req.method(), req.target(), req.body(), ctx_->cfg(), ctx_->svc().ready());
  if (auto* immediate = std::get_if<reply>(&result))
    return send(std::move(*immediate));
  auto call = std::get<service_call>(std::move(result));
  std::string waiting_as; // the principal whose waiter this acquire counts as, if any
  if (who) {
    if (auto err = authorize(*who, call, ctx_->cfg())) {
      log_denied(err, request_id_, who->name, peer_);
      return send(error_reply(err));
    }
    bool keeps_lease =
      std::holds_alternative<renew_request>(call) || std::holds_alternative<release_request>(call);
    if (!keeps_lease && !ctx_->limits().admit(*who)) {
      auto limited = error_reply(http::status::too_many_requests, "rate_limited",
                                 principal_limits::over_rate(*who));
      limited.retry_after_s = 1;
      return send(std::move(limited));
    }
    const auto* acquire = std::get_if<acquire_request>(&call);
    if (acquire != nullptr && acquire->wait_ms > 0 && who->max_waiting > 0) {
      if (!ctx_->limits().start_waiting(*who))
        return send(error_reply(principal_limits::over_waiters(*who)));
      waiting_as = who->name;
    }
    principal_ = who->name;
  } else {
    principal_.clear();
  }
  start_call(std::move(call), std::move(waiting_as));
}

void http_session::upgrade(http::request<http::string_body> req) {
  auto target = std::string_view{req.target().data(), req.target().size()};
  auto path = target.substr(0, target.find('?'));
  if (path != "/v1/ws")
    return send(error_reply(http::status::not_found, "not_found",
                            "WebSocket upgrades are served at /v1/ws only"));
  if (draining_ || !ctx_->svc().running())
    return send(error_reply(
      caf::make_error(errc::shutting_down, std::string{"the server is shutting down"})));
  if (ctx_->ws_sessions() >= ctx_->cfg().ws_max_sessions) {
    // Turned away before the upgrade, with a plain HTTP answer the client can read.
    keep_alive_ = false;
    return send(error_reply(
      caf::make_error(errc::overloaded, "too many WebSocket sessions (ws-max-sessions = "
                                          + std::to_string(ctx_->cfg().ws_max_sessions) + ")")));
  }
  // The socket is the WebSocket session's from here; this HTTP session ends without closing it.
  stream_.next_layer().expires_never();
  // With authentication, a token on the upgrade authenticates the socket; without one the
  // client sends an auth frame first (browsers cannot set the header).
  std::optional<token_hash> credential;
  if (const auto* auth = ctx_->auth()) {
    if (auto token = bearer_token(req[http::field::authorization]); !token.empty()) {
      credential = hash_token(token);
      if (!auth->find(*credential)) {
        log_denied(unauthenticated_error(), request_id_, "", peer_);
        return send(unauthenticated_reply());
      }
    }
  }
  auto session = std::make_shared<ws_session>(std::move(stream_), ctx_, peer_,
                                              std::move(credential), certificate_name_);
  phase_ = phase::closed;
  if (!ctx_->add_ws(session))
    return session->drop(); // lost the race for the last slot, or the server is stopping
  session->run(std::move(req));
}

void http_session::start_call(service_call call, std::string waiting_as) {
  phase_ = phase::calling;
  // A waiting acquire may take up to wait_max_ms: the service, not a timer, ends the call.
  stream_.next_layer().expires_never();
  bool may_wait = false;
  if (auto* acquire = std::get_if<acquire_request>(&call)) {
    acquire->request_id = ctx_->svc().next_request_id();
    acquire_ = pending_acquire{acquire->name, acquire->request_id};
    may_wait = acquire->wait_ms > 0;
  }
  dispatch(ctx_->svc(), std::move(call), call_context{request_id_, principal_},
           [self = shared_from_this(), waiting_as = std::move(waiting_as)](reply r) {
             if (!waiting_as.empty()) // answered: it waits no more
               self->ctx_->limits().end_waiting(waiting_as);
             self->post_reply(std::move(r));
           });
  // Only a waiting acquire can stay unanswered for long: watch its client, so that a waiter who
  // leaves is withdrawn at once. Any other call is answered within its deadline, and an acquire
  // granted to a client who left meanwhile is undone when its answer comes (on_reply). Not
  // watching spares each such call a read, its cancellation and one more completion before the
  // response goes out.
  if (may_wait)
    do_watch_client();
}

void http_session::post_reply(reply r) {
  // Runs on a CAF worker thread (or, for a request the service refuses at once, right here).
  ctx_->post_reply(strand_, [self = shared_from_this(), r = std::move(r)]() mutable {
    self->on_reply(std::move(r));
  });
}

void http_session::on_reply(reply r) {
  if (phase_ != phase::calling)
    return; // the client went away meanwhile, and fail() withdrew its acquire
  if (r.status != http::status::ok)
    acquire_.reset(); // nothing was granted, so there is nothing to undo
  else if (acquire_ && peer_closed())
    return abandon(); // a grant nobody will read: undone (the watch may not have seen the FIN)
  send(std::move(r));
}

bool http_session::peer_closed() {
  // A zero-byte peek means the client's FIN is queued: it sent everything it will send.
  char probe;
  // Under TLS a close_notify alert may come first: then the watch read finds the end instead.
  auto n =
    ::recv(stream_.next_layer().socket().native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

bool http_session::request_begun() {
  if (buffer_.size() > 0 || (parser_ && parser_->got_some()))
    return true;
  error_code ec;
  return stream_.next_layer().socket().available(ec) > 0 && !ec;
}

// --- watching the client while a call is pending -----------------------------------------------

void http_session::do_watch_client() {
  if (buffer_.size() >= ctx_->cfg().body_limit + pipeline_slack)
    return; // enough pipelined data; the rest waits in the kernel
  watching_ = true;
  stream_.async_read_some(
    buffer_.prepare(watch_chunk),
    beast::bind_front_handler(&http_session::on_watch_client, shared_from_this()));
}

void http_session::on_watch_client(error_code ec, std::size_t bytes) {
  watching_ = false;
  buffer_.commit(bytes); // pipelined data: parsed once this request is answered
  if (phase_ == phase::closed)
    return;
  if (ec == asio::error::eof && !acquire_) {
    // The client closed (or half-closed) its side. Nothing needs withdrawing, and a half-closed
    // client still reads: answer, then close.
    keep_alive_ = false;
    if (phase_ == phase::replying)
      do_write(); // written now, with keep_alive_ false: Connection: close
    return;
  }
  if (ec && ec != asio::error::operation_aborted)
    return fail(ec, "watch"); // the client went away mid-acquire, or the connection broke
  if (phase_ == phase::replying)
    return do_write(); // send() cancelled this read to make way for the response
  if (!ec)
    do_watch_client();
}

// --- writing the response ----------------------------------------------------------------------

void http_session::send(reply r) {
  response_ = std::move(r);
  if (watching_) {
    // One read at a time: stop watching first; on_watch_client continues with do_write().
    phase_ = phase::replying;
    stream_.next_layer().cancel();
    return;
  }
  do_write();
}

void http_session::reply_and_close(reply r) {
  // The request could not be read to its end, so the connection cannot carry another one.
  version_ = 11;
  keep_alive_ = false;
  head_ = false;
  request_id_ = request_id_of(parser_->get());
  send(std::move(r));
}

void http_session::do_write() {
  phase_ = phase::writing;
  write_response(response_, response_framing{version_, keep_alive_, head_, request_id_}, wire_);
  std::size_t written = 0;
  if (!stream_.secure()) {
    // A response of a few hundred bytes nearly always fits in the socket's send buffer. Sent
    // here, it needs no asynchronous write, hence no write timer to arm and cancel and no trip
    // through the scheduler; what does not fit goes the asynchronous way below.
    auto& socket = stream_.next_layer().socket();
    error_code ec;
    if (!socket.non_blocking())
      socket.non_blocking(true, ec); // only this write is synchronous; Asio's own are unaffected
    if (!ec)
      written = socket.write_some(asio::buffer(wire_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again)
      ec = {};
    if (ec)
      return on_write(ec, written);
    if (written == wire_.size())
      return on_write({}, written);
  }
  // A client that takes longer than the idle limit to accept a response is as good as gone.
  stream_.next_layer().expires_after(milliseconds{ctx_->cfg().header_timeout_ms});
  asio::async_write(stream_, asio::buffer(wire_) + written,
                    beast::bind_front_handler(&http_session::on_write, shared_from_this()));
}

void http_session::on_write(error_code ec, std::size_t) {
  if (phase_ == phase::closed)
    return;
  if (ec)
    return fail(ec, "write"); // withdraws an acquire whose grant was not delivered
  acquire_.reset();
  if (!keep_alive_ || draining_)
    return do_close();
  do_read_header();
}

// --- closing -----------------------------------------------------------------------------------

void http_session::do_close() {
  phase_ = phase::closing;
  if (stream_.secure()) {
    // close_notify, then the client's, within the linger time; the TCP close follows either way.
    stream_.next_layer().expires_after(linger_time);
    return stream_.tls().async_shutdown(
      [self = shared_from_this()](error_code) { self->abandon(); });
  }
  error_code ec;
  stream_.next_layer().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  if (ec)
    return abandon();
  stream_.next_layer().expires_after(linger_time);
  do_linger();
}

void http_session::do_linger() {
  buffer_.clear();
  stream_.async_read_some(buffer_.prepare(watch_chunk),
                          beast::bind_front_handler(&http_session::on_linger, shared_from_this()));
}

void http_session::on_linger(error_code ec, std::size_t) {
  if (phase_ == phase::closed)
    return;
  if (ec)
    return abandon(); // eof, the linger deadline or a reset: done either way
  do_linger();
}

void http_session::close_now() {
  abandon();
}

void http_session::fail(error_code ec, const char* what) {
  if (phase_ == phase::closed)
    return;
  if (!is_quiet(ec))
    log_event(log_level::debug, "connection_error",
              {{"peer", peer_}, {"stage", what}, {"error", ec.message()}});
  abandon();
}

void http_session::abandon() {
  if (phase_ == phase::closed)
    return;
  phase_ = phase::closed;
  if (acquire_) {
    // The client will never see the answer: withdraw the waiter, or undo its grant.
    ctx_->svc().cancel(acquire_->name, acquire_->request_id);
    acquire_.reset();
  }
  stream_.next_layer().close();
}

std::string_view http_session::unread() const {
  auto bytes = buffer_.cdata();
  return {static_cast<const char*>(bytes.data()), bytes.size()};
}

std::string http_session::request_id_of(const http::fields& fields) {
  auto given = fields["x-request-id"];
  std::string_view id{given.data(), given.size()};
  return valid_request_id(id) ? std::string{id} : make_request_id();
}

} // namespace fencelock::net
