#pragma once

// The blocking load clients of the benchmarks that talk to a real `fencelock serve` over
// loopback: one WebSocket or HTTP keep-alive connection per thread, with nothing on the path but
// the socket. The servers themselves run under the test harness (tests/support/server_process).

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

namespace fencelock::bench {

/// Returns the milliseconds since `t0` on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Returns 127.0.0.1, where every benchmark server listens.
inline boost::asio::ip::address loopback() {
  return boost::asio::ip::make_address("127.0.0.1");
}

/// Returns whether `frame` is a frame of type `type`.
inline bool is_type(const boost::json::object& frame, std::string_view type) {
  const auto* got = frame.if_contains("type");
  return got != nullptr && got->is_string() && got->get_string() == type;
}

/// One WebSocket to /v1/ws with blocking I/O, used by one thread. Throws on I/O errors.
class ws_client {
public:
  /// Connects and reads the hello frame.
  explicit ws_client(uint16_t port) : ws_(ioc_) {
    ws_.next_layer().connect(boost::asio::ip::tcp::endpoint{loopback(), port});
    // Pipelined requests are small frames written back to back: not one may wait for an ACK.
    ws_.next_layer().set_option(boost::asio::ip::tcp::no_delay{true});
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/v1/ws");
    ws_.text(true);
    auto hello = read();
    if (!is_type(hello, "hello"))
      throw std::runtime_error("expected hello, got " + boost::json::serialize(hello));
  }

  ~ws_client() {
    boost::system::error_code ec;
    ws_.close(boost::beast::websocket::close_code::normal, ec); // the server may be gone already
  }

  ws_client(const ws_client&) = delete;
  ws_client& operator=(const ws_client&) = delete;

  /// Writes one text frame.
  void send(const std::string& frame) {
    ws_.write(boost::asio::buffer(frame));
  }

  /// Returns the next frame from the server.
  boost::json::object read() {
    buffer_.clear();
    ws_.read(buffer_);
    auto data = buffer_.cdata();
    auto v =
      boost::json::parse(std::string_view{static_cast<const char*>(data.data()), data.size()});
    return std::move(v.as_object());
  }

  /// Returns the reply, granted or error frame that answers request `id`; skips pushes.
  boost::json::object answer(int64_t id) {
    for (;;) {
      auto frame = read();
      const auto* got = frame.if_contains("id");
      if (got != nullptr && got->is_int64() && got->get_int64() == id)
        return frame;
    }
  }

private:
  boost::asio::io_context ioc_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  boost::beast::flat_buffer buffer_;
};

/// One HTTP keep-alive connection with blocking I/O, as in http_bench. Throws on I/O errors.
class http_client {
public:
  explicit http_client(uint16_t port) : socket_(ioc_) {
    socket_.connect(boost::asio::ip::tcp::endpoint{loopback(), port});
    socket_.set_option(boost::asio::ip::tcp::no_delay{true});
  }

  /// Sends `POST target` with a JSON body and returns the response.
  boost::beast::http::response<boost::beast::http::string_body> post(const std::string& target,
                                                                     std::string body) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    return exchange(std::move(req));
  }

  /// Sends `GET target` and returns the response.
  boost::beast::http::response<boost::beast::http::string_body> get(const std::string& target) {
    namespace http = boost::beast::http;
    return exchange(http::request<http::string_body>{http::verb::get, target, 11});
  }

private:
  boost::beast::http::response<boost::beast::http::string_body>
  exchange(boost::beast::http::request<boost::beast::http::string_body> req) {
    namespace http = boost::beast::http;
    req.set(http::field::host, "127.0.0.1");
    req.prepare_payload();
    http::write(socket_, req);
    http::response<http::string_body> res;
    http::read(socket_, buffer_, res);
    return res;
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

} // namespace fencelock::bench
