#pragma once

// A small synchronous WebSocket client for tests (Boost.Beast underneath). Every receive has a
// deadline; a receive that times out leaves its read pending for the next call, so no frame is
// lost. Frames are JSON objects except where a test sends raw text or binary on purpose.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

namespace fencelock::test {

class ws_client {
public:
  /// Connects to ws://127.0.0.1:`port`/v1/ws and reads the hello frame; throws
  /// std::runtime_error when that fails. `receive_buffer` > 0 shrinks the socket's receive
  /// buffer (SO_RCVBUF), for tests of clients that do not keep up.
  /// A non-empty `bearer` goes out as the upgrade's Authorization header.
  explicit ws_client(uint16_t port, int receive_buffer = 0, std::string bearer = {});
  ~ws_client();

  ws_client(const ws_client&) = delete;
  ws_client& operator=(const ws_client&) = delete;

  /// Returns the hello frame the server sent first.
  const boost::json::object& hello() const noexcept;

  /// Sends `frame` as a text frame; returns false when the socket is closed.
  bool send(const boost::json::object& frame);

  /// Sends `text` as a text frame, or as a binary frame when `binary`.
  bool send_raw(const std::string& text, bool binary = false);

  /// Returns the next frame, or nothing on timeout or when the socket closed.
  std::optional<boost::json::object> receive(std::chrono::milliseconds timeout);

  /// Returns the first frame satisfying `pred` within `timeout`; frames before it are dropped.
  std::optional<boost::json::object> receive_until(
    const std::function<bool(const boost::json::object&)>& pred, std::chrono::milliseconds timeout);

  /// Returns the answer (reply, granted or error frame) to request `id`, skipping pushes and
  /// other answers.
  std::optional<boost::json::object> answer_to(const boost::json::value& id,
                                               std::chrono::milliseconds timeout);

  /// Returns whether the server closed the socket; its close code in `code`.
  bool closed(uint16_t& code) const noexcept;

  /// Closes the socket with a close handshake (or drops it when `abrupt`).
  void close(bool abrupt = false);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace fencelock::test
