#include "support/http_client.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace fencelock::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

tcp::endpoint loopback(uint16_t port) {
  return tcp::endpoint{asio::ip::make_address_v4("127.0.0.1"), port};
}

// Runs one asynchronous operation to completion on `ioc`; the operation's deadline is the
// stream's expiry. Returns the operation's error code.
template <class Initiate>
error_code run_op(asio::io_context& ioc, Initiate&& initiate) {
  error_code result = asio::error::would_block;
  initiate([&result](error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

std::string json_string_field(const std::optional<boost::json::value>& v, const char* key) {
  if (!v || !v->is_object())
    return {};
  auto* p = v->as_object().if_contains(key);
  if (p == nullptr || !p->is_string())
    return {};
  return std::string{p->as_string()};
}

http_response to_response(http::response<http::string_body>&& res) {
  header_list headers;
  for (const auto& field : res.base())
    headers.emplace_back(lower(field.name_string()), std::string{field.value()});
  return make_response(static_cast<int>(res.result_int()), std::move(headers),
                       std::move(res.body()));
}

} // namespace

// -- http_response ------------------------------------------------------------------------------

std::string http_response::header(std::string_view name) const {
  auto key = lower(name);
  for (const auto& [k, v] : headers)
    if (k == key)
      return v;
  return {};
}

bool http_response::has_header(std::string_view name) const {
  auto key = lower(name);
  return std::any_of(headers.begin(), headers.end(), [&](const auto& kv) { return kv.first == key; });
}

std::string http_response::error() const {
  return json_string_field(json, "error");
}

std::string http_response::message() const {
  return json_string_field(json, "message");
}

std::string http_response::describe() const {
  std::string b = body.size() > 600 ? body.substr(0, 600) + "..." : body;
  return std::to_string(status) + " " + b;
}

http_response make_response(int status, header_list headers, std::string body) {
  http_response res;
  res.status = status;
  res.headers = std::move(headers);
  res.body = std::move(body);
  if (!res.body.empty()) {
    error_code ec;
    auto v = boost::json::parse(res.body, ec);
    if (!ec)
      res.json = std::move(v);
  }
  return res;
}

// -- http_client --------------------------------------------------------------------------------

struct http_client::impl {
  uint16_t port;
  http_options opts;
  asio::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  void drop() {
    if (stream) {
      error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->socket().close(ignored);
      stream.reset();
    }
    buffer.clear();
  }
};

http_client::http_client(uint16_t port, http_options opts) : impl_(std::make_unique<impl>()) {
  impl_->port = port;
  impl_->opts = opts;
}

http_client::~http_client() {
  impl_->drop();
}

uint16_t http_client::port() const noexcept {
  return impl_->port;
}

void http_client::disconnect() {
  impl_->drop();
}

http_result http_client::try_request(std::string_view method, std::string_view target,
                                     const std::optional<std::string>& body,
                                     const header_list& headers,
                                     std::chrono::milliseconds timeout) {
  auto& d = *impl_;
  http_result result;
  auto deadline = timeout.count() > 0 ? timeout : d.opts.timeout;
  auto fail = [&](error_code ec, const char* step) {
    result.ec = ec;
    result.what = std::string{step} + " " + std::string{method} + " " + std::string{target}
                  + " on port " + std::to_string(d.port) + ": " + ec.message();
    d.drop();
    return result;
  };

  if (!d.stream) {
    d.stream.emplace(d.ioc);
    d.stream->expires_after(deadline);
    auto ec = run_op(d.ioc, [&](auto handler) {
      d.stream->async_connect(loopback(d.port), std::move(handler));
    });
    if (ec)
      return fail(ec, "connect");
  }
  d.stream->expires_after(deadline);

  http::request<http::string_body> req;
  req.version(11);
  auto verb = http::string_to_verb(method);
  if (verb == http::verb::unknown)
    req.method_string(method);
  else
    req.method(verb);
  req.target(target);
  req.set(http::field::host, "127.0.0.1:" + std::to_string(d.port));
  if (body) {
    req.set(http::field::content_type, "application/json");
    req.body() = *body;
  }
  for (const auto& [name, value] : headers)
    req.set(name, value);
  req.keep_alive(d.opts.keep_alive);
  req.prepare_payload();

  auto ec = run_op(d.ioc, [&](auto handler) {
    http::async_write(*d.stream, req, std::move(handler));
  });
  if (ec)
    return fail(ec, "write");

  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  if (verb == http::verb::head)
    parser.skip(true); // the answer announces a body it does not carry
  ec = run_op(d.ioc, [&](auto handler) {
    http::async_read(*d.stream, d.buffer, parser, std::move(handler));
  });
  if (ec)
    return fail(ec, "read");
  auto res = parser.release();
  bool keep = d.opts.keep_alive && res.keep_alive();
  result.response = to_response(std::move(res));
  if (!keep)
    d.drop();
  return result;
}

http_response http_client::request(std::string_view method, std::string_view target,
                                   const std::optional<std::string>& body,
                                   const header_list& headers,
                                   std::chrono::milliseconds timeout) {
  auto res = try_request(method, target, body, headers, timeout);
  if (!res)
    throw std::runtime_error("HTTP transport error: " + res.what);
  return std::move(res.response);
}

http_response http_client::get(std::string_view target, const header_list& headers) {
  return request("GET", target, std::nullopt, headers);
}

http_response http_client::post(std::string_view target, const boost::json::value& body,
                                 const header_list& headers, std::chrono::milliseconds timeout) {
  return request("POST", target, boost::json::serialize(body), headers, timeout);
}

// -- raw_connection -----------------------------------------------------------------------------

struct raw_connection::impl {
  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
};

raw_connection::raw_connection(uint16_t port, std::chrono::milliseconds timeout)
  : impl_(std::make_unique<impl>()) {
  impl_->timeout = timeout;
  impl_->stream.expires_after(timeout);
  auto ec = run_op(impl_->ioc, [&](auto handler) {
    impl_->stream.async_connect(loopback(port), std::move(handler));
  });
  if (ec)
    throw std::runtime_error("raw connect to port " + std::to_string(port) + ": " + ec.message());
}

raw_connection::~raw_connection() {
  close();
}

error_code raw_connection::send(std::string_view bytes) {
  impl_->stream.expires_after(impl_->timeout);
  return run_op(impl_->ioc, [&](auto handler) {
    asio::async_write(impl_->stream, asio::buffer(bytes.data(), bytes.size()),
                      std::move(handler));
  });
}

std::optional<http_response> raw_connection::read_response(error_code* ec_out) {
  impl_->stream.expires_after(impl_->timeout);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  auto ec = run_op(impl_->ioc, [&](auto handler) {
    http::async_read(impl_->stream, impl_->buffer, parser, std::move(handler));
  });
  if (ec_out != nullptr)
    *ec_out = ec;
  if (ec)
    return std::nullopt;
  return to_response(parser.release());
}

bool raw_connection::wait_closed(std::chrono::milliseconds timeout) {
  impl_->stream.expires_after(timeout);
  char scratch[4096];
  for (;;) {
    auto ec = run_op(impl_->ioc, [&](auto handler) {
      impl_->stream.async_read_some(asio::buffer(scratch), std::move(handler));
    });
    if (!ec)
      continue;
    return ec != beast::error::timeout;
  }
}

bool raw_connection::readable(std::chrono::milliseconds timeout) {
  auto& sock = impl_->stream.socket();
  if (!sock.is_open())
    return false;
  bool ready = false;
  asio::steady_timer timer{impl_->ioc, timeout};
  sock.async_wait(tcp::socket::wait_read, [&](error_code ec) {
    if (!ec)
      ready = true;
    timer.cancel();
  });
  timer.async_wait([&](error_code ec) {
    if (!ec)
      sock.cancel();
  });
  impl_->ioc.restart();
  impl_->ioc.run();
  return ready;
}

void raw_connection::shutdown_send() {
  error_code ignored;
  impl_->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

error_code raw_connection::send_and_shutdown(std::string_view bytes) {
  // Corked, the bytes wait in the send queue; the FIN of the shutdown joins the queued segment
  // and the kernel sends both at once.
  auto& sock = impl_->stream.socket();
  int on = 1;
  ::setsockopt(sock.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on);
  if (auto ec = send(bytes))
    return ec;
  error_code ec;
  sock.shutdown(tcp::socket::shutdown_send, ec);
  int off = 0;
  ::setsockopt(sock.native_handle(), IPPROTO_TCP, TCP_CORK, &off, sizeof off);
  return ec;
}

void raw_connection::close() {
  error_code ignored;
  auto& sock = impl_->stream.socket();
  if (sock.is_open()) {
    sock.shutdown(tcp::socket::shutdown_both, ignored);
    sock.close(ignored);
  }
}

void raw_connection::reset() {
  error_code ignored;
  auto& sock = impl_->stream.socket();
  if (sock.is_open()) {
    // SO_LINGER with a zero timeout: close() sends RST instead of FIN.
    sock.set_option(asio::socket_base::linger{true, 0}, ignored);
    sock.close(ignored);
  }
}

// -- helpers ------------------------------------------------------------------------------------

std::string raw_request(std::string_view method, std::string_view target,
                        const std::optional<std::string>& body, const header_list& headers) {
  std::string out;
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  out.append("Host: 127.0.0.1\r\n");
  for (const auto& [name, value] : headers)
    out.append(name).append(": ").append(value).append("\r\n");
  if (body) {
    out.append("Content-Type: application/json\r\n");
    out.append("Content-Length: ").append(std::to_string(body->size())).append("\r\n");
  }
  out.append("\r\n");
  if (body)
    out.append(*body);
  return out;
}

std::string url_encode(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

} // namespace fencelock::test
