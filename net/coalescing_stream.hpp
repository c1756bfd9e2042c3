#pragma once

// The layer under a WebSocket stream that writes every frame queued meanwhile in one write.
//
// Beast writes one message per async_write, and so one sendmsg per frame: with 64 answers in
// flight on one socket, the I/O thread spent its time in the kernel's TCP path, once per frame.
// A session queues its data frames here instead (send_text), already framed; the layer writes
// whatever is queued once the socket is free and the handlers ready to run have run (they may
// queue more), so a burst of answers leaves in one write.
//
//   ws_session ── send_text ──────────────┐
//   Beast (handshake, ping, pong, close) ──┤ async_write_some: copied, its handler held
//                                          ▼
//                       one write in flight at a time ──► next layer (TCP, or TLS over it)
//
// The layer is the only writer of the next layer, so Beast's own frames can never land inside
// one of ours: each write_some of Beast's is taken whole, written at a frame boundary (after
// the data frames queued before it), and completed once it is written. No data frame follows a
// close frame: the session stops queueing them when it starts closing and drops what is still
// queued (discard_queued), and once Beast writes a close of its own (a protocol error it
// answers) the layer takes no more.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/system/error_code.hpp>

namespace fencelock::net {

/// Hears how the frames queued on a coalescing_stream went out. Runs on the stream's executor.
class frames_listener {
public:
  /// Called after each write of queued frames; `ec` is set when the connection failed.
  virtual void on_frames_written(boost::system::error_code ec) = 0;

  virtual ~frames_listener() = default;
};

/// Appends the header of one unmasked, unfragmented server-to-client WebSocket frame with
/// `opcode` (1 = text) and a payload of `size` bytes to `out` (RFC 6455, section 5.2).
inline void append_frame_header(std::string& out, uint8_t opcode, std::size_t size) {
  out.push_back(static_cast<char>(0x80 | opcode)); // FIN: the whole message in one frame
  if (size < 126) {
    out.push_back(static_cast<char>(size));
  } else if (size <= 0xffff) {
    out.push_back(static_cast<char>(126));
    out.push_back(static_cast<char>(size >> 8));
    out.push_back(static_cast<char>(size & 0xff));
  } else {
    out.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((static_cast<uint64_t>(size) >> shift) & 0xff));
  }
}

/// A Beast AsyncStream over `NextLayer` (the WebSocket stream's next layer) that coalesces
/// writes. Not thread-safe: use it on its executor (the connection's strand) only.
template <class NextLayer>
class coalescing_stream {
public:
  using executor_type = typename NextLayer::executor_type;
  using next_layer_type = NextLayer;
  using error_code = boost::system::error_code;

  explicit coalescing_stream(NextLayer&& next) : next_(std::move(next)) {
  }

  coalescing_stream(coalescing_stream&&) = delete; // the writes in flight point to it

  /// Returns the stream written to, for beast::get_lowest_layer and teardown.
  NextLayer& next_layer() noexcept {
    return next_;
  }

  executor_type get_executor() noexcept {
    return next_.get_executor();
  }

  /// Sets who hears of each write of queued frames. It is held strongly while a write is
  /// queued or in flight, so that it outlives the write's completion.
  void listen(std::weak_ptr<frames_listener> listener) {
    listener_ = std::move(listener);
  }

  /// Queues `payload` as one text frame, after everything queued before it. It is written
  /// together with whatever else is queued once the handlers ready to run have run.
  void send_text(std::string_view payload) {
    if (failed_ || closed_)
      return; // the connection is gone, or closing: nothing more goes out
    append_frame_header(queued_, 1, payload.size());
    queued_.append(payload);
    schedule_flush();
  }

  /// Returns the bytes queued or being written: what a client that does not read piles up.
  std::size_t buffered() const noexcept {
    return queued_.size() + beast_bytes_.size() + in_flight_.size();
  }

  /// Returns whether nothing is queued or being written.
  bool idle() const noexcept {
    return !writing_ && !flush_posted_ && !has_queued();
  }

  /// Drops the data frames queued and not yet being written (a close is about to follow).
  void discard_queued() noexcept {
    queued_.clear();
  }

  /// Ends writing: Beast's writes still waiting complete with operation_aborted, and nothing
  /// more is written. Call as the connection closes: the handlers held here hold their
  /// session, which would otherwise outlive an io_context stopped before the write returned.
  void abandon() {
    if (!failed_)
      failed_ = boost::asio::error::operation_aborted;
    queued_.clear();
    beast_bytes_.clear();
    auto waiting = std::move(beast_waiting_);
    beast_waiting_.clear();
    auto in_flight = std::move(completing_);
    completing_.clear();
    for (auto& w : in_flight)
      complete(std::move(w), failed_);
    for (auto& w : waiting)
      complete(std::move(w), failed_);
  }

  template <class MutableBufferSequence, class ReadHandler>
  void async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
    next_.async_read_some(buffers, std::forward<ReadHandler>(handler));
  }

  /// Beast's own writes: copied whole and written at the next frame boundary; `handler` runs
  /// once they are written (Beast writes one at a time).
  template <class ConstBufferSequence, class WriteHandler>
  void async_write_some(const ConstBufferSequence& buffers, WriteHandler&& handler) {
    auto size = boost::asio::buffer_size(buffers);
    if (failed_) {
      auto ex = boost::asio::get_associated_executor(handler, get_executor());
      boost::asio::post(ex, [h = std::forward<WriteHandler>(handler), ec = failed_]() mutable {
        std::move(h)(ec, std::size_t{0});
      });
      return;
    }
    auto at = beast_bytes_.size();
    beast_bytes_.resize(at + size);
    boost::asio::buffer_copy(boost::asio::buffer(beast_bytes_.data() + at, size), buffers);
    if (size > 0 && static_cast<unsigned char>(beast_bytes_[at]) == close_frame_start)
      closed_ = true;
    beast_waiting_.emplace_back(size, std::forward<WriteHandler>(handler));
    schedule_flush();
  }

  template <class TeardownHandler>
  friend void async_teardown(boost::beast::role_type role, coalescing_stream& s,
                             TeardownHandler&& handler) {
    async_teardown(role, s.next_, std::forward<TeardownHandler>(handler));
  }

  friend void teardown(boost::beast::role_type role, coalescing_stream& s, error_code& ec) {
    teardown(role, s.next_, ec);
  }

private:
  using beast_handler = boost::asio::any_completion_handler<void(error_code, std::size_t)>;

  /// The first byte of a close frame: FIN and opcode 8 (RFC 6455, 5.5.1; control frames are
  /// never fragmented). Beast writes every frame of its own in one write_some here.
  static constexpr unsigned char close_frame_start = 0x88;

  struct beast_write {
    beast_write(std::size_t n, beast_handler h) : size(n), handler(std::move(h)) {
    }
    std::size_t size;
    beast_handler handler;
  };

  /// Returns whether anything waits for the next write: data frames or Beast's bytes.
  bool has_queued() const noexcept {
    return !queued_.empty() || !beast_bytes_.empty();
  }

  /// Writes what is queued once the handlers ready to run have run (they may queue more).
  void schedule_flush() {
    if (writing_ || flush_posted_ || failed_)
      return;
    flush_posted_ = true;
    boost::asio::post(get_executor(), [this, keep = listener_.lock()] {
      flush_posted_ = false;
      flush(keep);
    });
  }

  /// Starts one write of Beast's bytes, then the queued frames, unless one is in flight.
  void flush(std::shared_ptr<frames_listener> keep) {
    if (writing_ || failed_ || !has_queued())
      return;
    writing_ = true;
    // The data frames queued so far, then Beast's: each is whole, so they fall between frames.
    in_flight_.swap(queued_);
    in_flight_.append(beast_bytes_);
    beast_bytes_.clear();
    completing_.swap(beast_waiting_);
    boost::asio::async_write(next_, boost::asio::buffer(in_flight_),
                             [this, keep = std::move(keep)](error_code ec, std::size_t) mutable {
                               on_written(ec, std::move(keep));
                             });
  }

  void on_written(error_code ec, std::shared_ptr<frames_listener> keep) {
    writing_ = false;
    in_flight_.clear();
    if (ec) {
      failed_ = ec;
      queued_.clear();
      beast_bytes_.clear();
      for (auto& w : beast_waiting_)
        completing_.push_back(std::move(w));
      beast_waiting_.clear();
    }
    auto done = std::move(completing_);
    completing_.clear();
    for (auto& w : done)
      complete(std::move(w), ec);
    if (keep)
      keep->on_frames_written(ec);
    // Not at once: the answers already posted to this thread join what was queued meanwhile.
    if (!ec && has_queued())
      schedule_flush();
  }

  void complete(beast_write w, error_code ec) {
    auto ex = boost::asio::get_associated_executor(w.handler, get_executor());
    boost::asio::dispatch(ex, [h = std::move(w.handler), ec, n = ec ? 0 : w.size]() mutable {
      std::move(h)(ec, n);
    });
  }

  NextLayer next_;
  std::string queued_;      // data frames, framed, not yet being written
  std::string beast_bytes_; // Beast's writes not yet being written
  std::string in_flight_;   // what the write in flight writes
  std::vector<beast_write> beast_waiting_; // Beast's writes in beast_bytes_
  std::vector<beast_write> completing_;    // Beast's writes in in_flight_
  bool writing_ = false;
  bool flush_posted_ = false;
  bool closed_ = false; // Beast wrote a close frame: no data frame goes after it
  error_code failed_; // the error a write ended with: nothing is written after it
  std::weak_ptr<frames_listener> listener_;
};

} // namespace fencelock::net
