// The layer under the WebSocket stream that writes queued frames together
// (net/coalescing_stream.hpp): what a burst of frames costs in writes, where Beast's own frames
// land, and how a failed connection ends it. In memory, on one thread.

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "net/coalescing_stream.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using boost::system::error_code;
using fencelock::net::coalescing_stream;
using fencelock::net::frames_listener;

namespace {

/// A next layer that records every write and completes it later, as a socket does; or fails
/// every write with `fail` once that is set.
class recording_stream {
public:
  using executor_type = asio::io_context::executor_type;

  explicit recording_stream(asio::io_context& io) : io_(&io) {
  }

  executor_type get_executor() noexcept {
    return io_->get_executor();
  }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers&, Handler&& handler) {
    asio::post(*io_, [h = std::forward<Handler>(handler)]() mutable {
      std::move(h)(asio::error::eof, std::size_t{0});
    });
  }

  template <class Buffers, class Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    std::string bytes(asio::buffer_size(buffers), '\0');
    asio::buffer_copy(asio::buffer(bytes), buffers);
    auto n = fail ? 0 : bytes.size();
    if (!fail)
      writes.push_back(std::move(bytes));
    asio::post(*io_, [h = std::forward<Handler>(handler), ec = fail, n]() mutable {
      std::move(h)(ec, n);
    });
  }

  std::vector<std::string> writes;
  error_code fail;

private:
  asio::io_context* io_;
};

struct counting_listener : frames_listener {
  void on_frames_written(error_code ec) override {
    ++calls;
    last = ec;
  }
  int calls = 0;
  error_code last;
};

/// Splits `bytes` into the payloads of the unmasked frames it holds; `opcodes` gets each
/// frame's first byte. Fails the test on a truncated frame.
std::vector<std::string> frames_in(const std::string& bytes, std::vector<int>* opcodes = nullptr) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    REQUIRE(bytes.size() - at >= 2);
    auto first = static_cast<unsigned char>(bytes[at]);
    uint64_t len = static_cast<unsigned char>(bytes[at + 1]) & 0x7f;
    at += 2;
    auto extended = len == 126 ? 2 : len == 127 ? 8 : 0;
    if (extended > 0) {
      REQUIRE(bytes.size() - at >= static_cast<std::size_t>(extended));
      len = 0;
      for (int i = 0; i < extended; ++i)
        len = (len << 8) | static_cast<unsigned char>(bytes[at + i]);
      at += extended;
    }
    REQUIRE(bytes.size() - at >= len);
    out.push_back(bytes.substr(at, len));
    if (opcodes != nullptr)
      opcodes->push_back(first);
    at += len;
  }
  return out;
}

/// Runs every handler that is ready, and those they make ready, without waiting for the ones
/// that wait for input (a read still pending).
void run_ready(asio::io_context& io) {
  io.restart();
  while (io.poll() > 0) {
  }
}

} // namespace

TEST_CASE("frames queued in one burst leave in one write", "[unit][ws]") {
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  auto listener = std::make_shared<counting_listener>();
  s.listen(listener);
  s.send_text("one");
  s.send_text("two");
  s.send_text("three");
  CHECK(s.buffered() > 0);
  CHECK_FALSE(s.idle());
  io.run();
  auto& writes = s.next_layer().writes;
  REQUIRE(writes.size() == 1);
  std::vector<int> opcodes;
  CHECK(frames_in(writes[0], &opcodes) == std::vector<std::string>{"one", "two", "three"});
  CHECK(opcodes == std::vector<int>{0x81, 0x81, 0x81}); // FIN, text
  CHECK(listener->calls == 1);
  CHECK_FALSE(listener->last);
  CHECK(s.idle());
  CHECK(s.buffered() == 0);
}

TEST_CASE("frames queued while a write is in flight go out together in the next",
          "[unit][ws]") {
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  s.send_text("a");
  io.run_one(); // the flush: the write of "a" is in flight now
  REQUIRE(s.next_layer().writes.size() == 1);
  s.send_text("b");
  s.send_text("c");
  io.run();
  auto& writes = s.next_layer().writes;
  REQUIRE(writes.size() == 2);
  CHECK(frames_in(writes[0]) == std::vector<std::string>{"a"});
  CHECK(frames_in(writes[1]) == std::vector<std::string>{"b", "c"});
}

TEST_CASE("answers ready when a write completes join the frames queued during it",
          "[unit][ws]") {
  // Under load the answers reach the I/O thread one by one; writing the moment a write
  // completes sent two or three frames per sendmsg, each waking the client.
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  s.send_text("a");
  io.run_one(); // the flush: the write of "a" is in flight, its completion ready to run
  s.send_text("b");
  asio::post(io, [&] { s.send_text("c"); }); // an answer that arrived behind the completion
  io.run();
  auto& writes = s.next_layer().writes;
  REQUIRE(writes.size() == 2);
  CHECK(frames_in(writes[0]) == std::vector<std::string>{"a"});
  CHECK(frames_in(writes[1]) == std::vector<std::string>{"b", "c"});
}

TEST_CASE("frame headers carry every payload length", "[unit][ws]") {
  for (std::size_t size : {0, 125, 126, 65535, 65536, 70000}) {
    asio::io_context io;
    coalescing_stream<recording_stream> s{recording_stream{io}};
    std::string payload(size, 'x');
    s.send_text(payload);
    s.send_text("end");
    io.run();
    std::string written; // Asio's async_write passes at most 64 KiB to each write_some
    for (const auto& w : s.next_layer().writes)
      written += w;
    auto frames = frames_in(written);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0] == payload);
    CHECK(frames[1] == "end");
  }
}

TEST_CASE("a write of Beast's is taken whole, after the frames before it, and completed once "
          "written",
          "[unit][ws]") {
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  s.send_text("first");
  io.run_one(); // "first" in flight
  s.send_text("second");
  const std::string control{"\x8a\x00", 2}; // a pong with no payload
  std::size_t written = 0;
  error_code result = asio::error::would_block;
  s.async_write_some(asio::buffer(control), [&](error_code ec, std::size_t n) {
    result = ec;
    written = n;
  });
  io.run_one(); // the write of "first" completes; the next write starts
  CHECK(result == asio::error::would_block); // not yet written
  io.run();
  CHECK_FALSE(result);
  CHECK(written == control.size());
  auto& writes = s.next_layer().writes;
  REQUIRE(writes.size() == 2);
  std::vector<int> opcodes;
  CHECK(frames_in(writes[1], &opcodes) == std::vector<std::string>{"second", ""});
  CHECK(opcodes == std::vector<int>{0x81, 0x8a}); // in order, the control frame whole
}

TEST_CASE("no data frame follows a close frame of Beast's", "[unit][ws]") {
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  s.send_text("before");
  error_code closed = asio::error::would_block;
  s.async_write_some(asio::buffer(std::string_view{"\x88\x02\x03\xea", 4}), // 1002
                     [&](error_code ec, std::size_t) { closed = ec; });
  s.send_text("after"); // an answer that came in as Beast answered a protocol error
  io.run();
  CHECK_FALSE(closed);
  std::string written;
  for (const auto& w : s.next_layer().writes)
    written += w;
  std::vector<int> opcodes;
  CHECK(frames_in(written, &opcodes) == std::vector<std::string>{"before", "\x03\xea"});
  CHECK(opcodes == std::vector<int>{0x81, 0x88});
}

TEST_CASE("a failed write ends the stream: the listener hears it, Beast's writes fail too",
          "[unit][ws]") {
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  auto listener = std::make_shared<counting_listener>();
  s.listen(listener);
  s.next_layer().fail = asio::error::broken_pipe;
  s.send_text("lost");
  error_code beast_result;
  s.async_write_some(asio::buffer(std::string_view{"\x89\x00", 2}),
                     [&](error_code ec, std::size_t) { beast_result = ec; });
  io.run();
  CHECK(listener->calls == 1);
  CHECK(listener->last == asio::error::broken_pipe);
  CHECK(beast_result == asio::error::broken_pipe);
  // Nothing is written after the failure, and nothing piles up.
  s.next_layer().fail = {};
  s.send_text("after");
  error_code later;
  s.async_write_some(asio::buffer(std::string_view{"\x89\x00", 2}),
                     [&](error_code ec, std::size_t) { later = ec; });
  io.restart();
  io.run();
  CHECK(s.next_layer().writes.empty());
  CHECK(later == asio::error::broken_pipe);
  CHECK(s.buffered() == 0);
}

TEST_CASE("discard_queued keeps what is being written; abandon answers Beast's waiting writes",
          "[unit][ws]") {
  asio::io_context io;
  coalescing_stream<recording_stream> s{recording_stream{io}};
  s.send_text("on its way");
  io.run_one(); // in flight
  s.send_text("dropped");
  s.discard_queued();
  error_code held = asio::error::would_block;
  s.async_write_some(asio::buffer(std::string_view{"\x88\x00", 2}),
                     [&](error_code ec, std::size_t) { held = ec; });
  s.abandon();
  io.run();
  CHECK(held == asio::error::operation_aborted); // answered, not written
  auto& writes = s.next_layer().writes;
  REQUIRE(writes.size() == 1);
  CHECK(frames_in(writes[0]) == std::vector<std::string>{"on its way"});
}

TEST_CASE("a Beast client reads the queued frames as messages, and is answered its pings",
          "[unit][ws]") {
  asio::io_context io;
  websocket::stream<coalescing_stream<beast::test::stream>> server{beast::test::stream{io}};
  websocket::stream<beast::test::stream> client{io};
  server.next_layer().next_layer().connect(client.next_layer());

  error_code accepted = asio::error::would_block;
  error_code shook = asio::error::would_block;
  server.async_accept([&](error_code ec) { accepted = ec; });
  client.async_handshake("localhost", "/v1/ws", [&](error_code ec) { shook = ec; });
  run_ready(io);
  REQUIRE_FALSE(accepted);
  REQUIRE_FALSE(shook);

  // The server reads (which answers pings), and queues two frames.
  beast::flat_buffer server_in;
  error_code server_read = asio::error::would_block;
  server.async_read(server_in, [&](error_code ec, std::size_t) { server_read = ec; });
  server.next_layer().send_text("{\"n\":1}");
  server.next_layer().send_text("{\"n\":2}");

  bool ponged = false;
  client.control_callback([&](websocket::frame_type kind, beast::string_view) {
    if (kind == websocket::frame_type::pong)
      ponged = true;
  });
  std::vector<std::string> got;
  beast::flat_buffer in;
  std::function<void(error_code, std::size_t)> on_read = [&](error_code ec, std::size_t) {
    REQUIRE_FALSE(ec);
    CHECK(client.got_text());
    got.push_back(beast::buffers_to_string(in.data()));
    in.consume(in.size());
    if (got.size() < 2)
      client.async_read(in, on_read);
  };
  client.async_read(in, on_read);
  run_ready(io);
  CHECK(got == std::vector<std::string>{"{\"n\":1}", "{\"n\":2}"});

  // A ping is answered through the layer while the server reads; a message after it arrives.
  client.async_ping({}, [](error_code ec) { REQUIRE_FALSE(ec); });
  server.next_layer().send_text("{\"n\":3}");
  client.async_read(in, [&](error_code ec, std::size_t) {
    REQUIRE_FALSE(ec);
    got.push_back(beast::buffers_to_string(in.data()));
  });
  run_ready(io);
  REQUIRE(got.size() == 3);
  CHECK(got[2] == "{\"n\":3}"); // queued before the ping was read: the pong comes after it

  // The server's close reaches the client with its code.
  error_code closed = asio::error::would_block;
  server.async_close(websocket::close_code::going_away, [&](error_code ec) { closed = ec; });
  error_code client_end;
  client.async_read(in, [&](error_code ec, std::size_t) { client_end = ec; });
  run_ready(io);
  CHECK(ponged); // read on the way to the close
  CHECK(client_end == websocket::error::closed);
  CHECK(client.reason().code == websocket::close_code::going_away);
  CHECK_FALSE(closed);
  CHECK(server_read != asio::error::would_block); // the server's read ended with the close
}
