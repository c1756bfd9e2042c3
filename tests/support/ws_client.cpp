#include "support/ws_client.hpp"

#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace fencelock::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;

struct ws_client::impl {
  asio::io_context ioc;
  websocket::stream<beast::tcp_stream> ws{ioc};
  beast::flat_buffer buffer;
  json::object hello;
  bool reading = false;   // an async_read is pending
  bool read_done = false; // ... and has completed
  boost::system::error_code read_ec;
  bool is_closed = false;
  uint16_t close_code = 0;

  // Runs the pending read until it completes or `timeout` passes; returns its frame text.
  std::optional<std::string> next_text(std::chrono::milliseconds timeout) {
    if (is_closed)
      return std::nullopt;
    if (!reading) {
      reading = true;
      read_done = false;
      ws.async_read(buffer, [this](boost::system::error_code ec, std::size_t) {
        read_done = true;
        read_ec = ec;
      });
    }
    ioc.restart();
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!read_done && std::chrono::steady_clock::now() < deadline)
      ioc.run_one_for(deadline - std::chrono::steady_clock::now());
    if (!read_done)
      return std::nullopt;
    reading = false;
    if (read_ec) {
      is_closed = true;
      close_code = static_cast<uint16_t>(ws.reason().code);
      return std::nullopt;
    }
    auto text = beast::buffers_to_string(buffer.data());
    buffer.consume(buffer.size());
    return text;
  }
};

ws_client::ws_client(uint16_t port, int receive_buffer, std::string bearer)
  : impl_(std::make_unique<impl>()) {
  auto& d = *impl_;
  auto& socket = beast::get_lowest_layer(d.ws).socket();
  socket.open(asio::ip::tcp::v4());
  if (receive_buffer > 0)
    socket.set_option(asio::socket_base::receive_buffer_size(receive_buffer));
  beast::get_lowest_layer(d.ws).expires_after(std::chrono::seconds{10});
  beast::get_lowest_layer(d.ws).connect(
    asio::ip::tcp::endpoint{asio::ip::make_address("127.0.0.1"), port});
  if (!bearer.empty())
    d.ws.set_option(websocket::stream_base::decorator([bearer](websocket::request_type& req) {
      req.set(beast::http::field::authorization, "Bearer " + bearer);
    }));
  d.ws.handshake("127.0.0.1:" + std::to_string(port), "/v1/ws");
  beast::get_lowest_layer(d.ws).expires_never();
  auto hello = d.next_text(std::chrono::seconds{10});
  if (!hello)
    throw std::runtime_error("no hello frame from the server");
  d.hello = json::parse(*hello).as_object();
}

ws_client::~ws_client() {
  close(true);
}

const json::object& ws_client::hello() const noexcept {
  return impl_->hello;
}

bool ws_client::send(const json::object& frame) {
  return send_raw(json::serialize(frame));
}

bool ws_client::send_raw(const std::string& text, bool binary) {
  auto& d = *impl_;
  if (d.is_closed)
    return false;
  boost::system::error_code ec;
  d.ws.binary(binary);
  // A blocking write is fine here: the server reads whatever it is sent, and a pending async
  // read does not conflict with a write.
  d.ws.write(asio::buffer(text), ec);
  return !ec;
}

std::optional<json::object> ws_client::receive(std::chrono::milliseconds timeout) {
  auto text = impl_->next_text(timeout);
  if (!text)
    return std::nullopt;
  boost::system::error_code ec;
  auto value = json::parse(*text, ec);
  if (ec || !value.is_object())
    throw std::runtime_error("the server sent a frame that is not a JSON object: " + *text);
  return std::move(value.as_object());
}

std::optional<json::object> ws_client::receive_until(
  const std::function<bool(const json::object&)>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return std::nullopt;
    auto frame = receive(left);
    if (!frame)
      return std::nullopt;
    if (pred(*frame))
      return frame;
  }
}

std::optional<json::object> ws_client::answer_to(const json::value& id,
                                                 std::chrono::milliseconds timeout) {
  return receive_until(
    [&](const json::object& f) {
      const auto* fid = f.if_contains("id");
      return fid != nullptr && *fid == id;
    },
    timeout);
}

bool ws_client::closed(uint16_t& code) const noexcept {
  code = impl_->close_code;
  return impl_->is_closed;
}

void ws_client::close(bool abrupt) {
  auto& d = *impl_;
  if (d.is_closed)
    return;
  d.is_closed = true;
  boost::system::error_code ec;
  if (!abrupt) {
    beast::get_lowest_layer(d.ws).expires_after(std::chrono::seconds{5});
    d.ws.async_close(websocket::close_code::normal, [](boost::system::error_code) {});
    d.ioc.restart();
    d.ioc.run_for(std::chrono::seconds{5});
  }
  beast::get_lowest_layer(d.ws).socket().close(ec);
}

} // namespace fencelock::test
