#include "bench/loader/conn.hpp"

#include <cstring>
#include <utility>

#include <boost/asio/write.hpp>

namespace fencelock::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// Read buffer size: room for many pipelined answers per read.
constexpr std::size_t read_chunk = 256 * 1024;

std::string_view type_of(std::string_view frame) {
  return wire::find_string(frame, "type").value_or(std::string_view{});
}

std::string to_text(uint64_t v) {
  return std::to_string(v);
}

} // namespace

// --- stream_conn ------------------------------------------------------------------------------

stream_conn::stream_conn(asio::io_context& ioc, endpoint ep, trial_shared& shared, tally& counts)
  : shared_(shared), counts_(counts), ep_(std::move(ep)), socket_(ioc), in_(read_chunk) {
}

void stream_conn::start() {
  ++shared_.open;
  socket_.async_connect(ep_.address, [self = shared_from_this()](const auto& ec) {
    if (ec) {
      self->fail("connect to " + self->ep_.host + ": " + ec.message());
      return;
    }
    boost::system::error_code ignored;
    // Requests are small and sent as soon as an answer comes: none may wait for an ACK.
    self->socket_.set_option(tcp::no_delay{true}, ignored);
    self->on_connected();
    self->flush();
    self->do_read();
  });
}

void stream_conn::mark_connected() {
  if (counted_connected_)
    return;
  counted_connected_ = true;
  ++shared_.connected;
}

void stream_conn::finish() {
  if (finished_)
    return;
  finished_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  mark_connected(); // a connection that never got ready must not hold the trial's start
  --shared_.open;
}

void stream_conn::fail(std::string_view why) {
  if (finished_)
    return;
  counts_.error(why);
  finish();
}

void stream_conn::finish_after_write() {
  closing_ = true;
  flush();
  if (!writing_)
    finish();
}

void stream_conn::do_read() {
  if (in_end_ == in_.size()) {
    if (in_begin_ > 0) {
      std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    } else {
      in_.resize(in_.size() * 2); // one message larger than the buffer
    }
  }
  socket_.async_read_some(
    asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
    [self = shared_from_this()](const auto& ec, std::size_t n) { self->on_read(ec, n); });
}

void stream_conn::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (finished_)
    return;
  if (ec) {
    fail("read from " + ep_.host + ": " + ec.message());
    return;
  }
  read_at_ = steady::now();
  in_end_ += n;
  auto used = on_data(std::string_view{in_.data() + in_begin_, in_end_ - in_begin_});
  if (finished_)
    return;
  if (used < 0) {
    fail("protocol error from " + ep_.host);
    return;
  }
  in_begin_ += static_cast<std::size_t>(used);
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
  } else if (in_.size() - in_end_ < read_chunk / 4) {
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
  flush();
  do_read();
}

void stream_conn::flush() {
  if (writing_ || out_.empty() || finished_)
    return;
  sending_.swap(out_);
  out_.clear();
  writing_ = true;
  asio::async_write(socket_, asio::buffer(sending_),
                    [self = shared_from_this()](const auto& ec, std::size_t) {
                      self->on_write(ec);
                    });
}

void stream_conn::on_write(const boost::system::error_code& ec) {
  writing_ = false;
  if (finished_)
    return;
  if (ec) {
    fail("write to " + ep_.host + ": " + ec.message());
    return;
  }
  sending_.clear();
  if (!out_.empty())
    flush();
  else if (closing_)
    finish();
}

// --- ws_conn ----------------------------------------------------------------------------------

void ws_conn::on_connected() {
  write(wire::ws_upgrade_request(ep_.host, "/v1/ws"));
}

void ws_conn::close() {
  static constexpr char normal[] = {'\x03', '\xe8'}; // 1000
  wire::append_ws_frame(out(), std::string_view{normal, 2}, 0x8);
  finish_after_write();
}

long ws_conn::on_data(std::string_view in) {
  std::size_t used = 0;
  if (!open_) {
    wire::http_response res;
    std::string chunked;
    auto took = wire::parse_http_response(in, res, chunked);
    if (took <= 0)
      return took;
    if (res.status != 101) {
      fail("upgrade refused: HTTP " + std::to_string(res.status) + " " + std::string{res.body});
      return took;
    }
    open_ = true;
    used = static_cast<std::size_t>(took);
    on_open();
  }
  while (!finished()) {
    wire::ws_frame f;
    auto took = wire::parse_ws_frame(in.substr(used), f);
    if (took < 0)
      return -1;
    if (took == 0)
      break;
    used += static_cast<std::size_t>(took);
    switch (f.opcode) {
      case 0x0: // continuation
      case 0x1: // text
        if (f.opcode == 0x1 && f.fin) {
          on_text(f.payload);
        } else {
          fragments_.append(f.payload);
          if (f.fin) {
            on_text(fragments_);
            fragments_.clear();
          }
        }
        break;
      case 0x8: // close
        finish();
        break;
      case 0x9: // ping
        wire::append_ws_frame(out(), f.payload, 0xA);
        break;
      default: // pong, binary: nothing the loader uses
        break;
    }
  }
  return static_cast<long>(used);
}

// --- HTTP cycles ------------------------------------------------------------------------------

namespace {

class http_cycle final : public stream_conn {
public:
  http_cycle(asio::io_context& ioc, endpoint ep, trial_shared& shared, tally& counts, api a,
             std::string name, int64_t ttl_ms)
    : stream_conn(ioc, std::move(ep), shared, counts), api_(a), name_(std::move(name)),
      ttl_ms_(ttl_ms) {
    if (api_ == api::fencelock) {
      wire::append_post(acquire_, ep_.host, "/v1/locks/" + name_ + "/acquire",
                        R"({"owner":")" + name_ + R"(","ttlMs":)" + std::to_string(ttl_ms_)
                          + "}");
      release_target_ = "/v1/locks/" + name_ + "/release";
      release_prefix_ = R"({"owner":")" + name_ + R"(","token":)";
    }
  }

private:
  enum class state { leasing, acquiring, releasing };

  void on_connected() override {
    mark_connected();
    if (api_ == api::etcd) {
      state_ = state::leasing;
      sent_ = steady::now();
      wire::append_post(out(), ep_.host, "/v3/lease/grant", R"({"TTL":60})");
      return;
    }
    begin_cycle();
  }

  void begin_cycle() {
    state_ = state::acquiring;
    sent_ = steady::now();
    if (api_ == api::fencelock)
      write(acquire_);
    else
      write(etcd_lock_);
  }

  void send_release(std::string_view body) {
    state_ = state::releasing;
    sent_ = steady::now();
    if (api_ == api::fencelock) {
      auto token = wire::find_uint(body, "token");
      if (!token) {
        fail("acquire answered without a token: " + std::string{body});
        return;
      }
      body_.assign(release_prefix_).append(to_text(*token)).append("}");
      wire::append_post(out(), ep_.host, release_target_, body_);
    } else {
      auto key = wire::find_string(body, "key");
      if (!key) {
        fail("lock answered without a key: " + std::string{body});
        return;
      }
      body_.assign(R"({"key":")").append(*key).append(R"("})");
      wire::append_post(out(), ep_.host, "/v3/lock/unlock", body_);
    }
  }

  void next() {
    if (shared_.stopping())
      finish();
    else
      begin_cycle();
  }

  long on_data(std::string_view in) override {
    std::size_t used = 0;
    while (!finished()) {
      wire::http_response res;
      auto took = wire::parse_http_response(in.substr(used), res, chunked_);
      if (took < 0)
        return -1;
      if (took == 0)
        break;
      used += static_cast<std::size_t>(took);
      handle(res);
      if (res.close && !finished())
        fail("the server closed the keep-alive connection");
    }
    return static_cast<long>(used);
  }

  void handle(const wire::http_response& res) {
    bool measuring = shared_.measuring();
    if (measuring && state_ != state::leasing)
      counts_.latency.record((read_at() - sent_).count());
    switch (state_) {
      case state::leasing: {
        auto id = wire::find_string(res.body, "ID");
        if (res.status != 200 || !id) {
          fail("etcd lease grant: HTTP " + std::to_string(res.status) + " "
               + std::string{res.body});
          return;
        }
        etcd_lock_.clear();
        wire::append_post(etcd_lock_, ep_.host, "/v3/lock/lock",
                          R"({"name":")" + wire::base64(name_) + R"(","lease":")"
                            + std::string{*id} + R"("})");
        begin_cycle();
        return;
      }
      case state::acquiring:
        if (res.status != 200) {
          counts_.error("acquire: HTTP " + std::to_string(res.status) + " "
                        + std::string{res.body});
          next();
          return;
        }
        send_release(res.body);
        return;
      case state::releasing:
        if (res.status != 200)
          counts_.error("release: HTTP " + std::to_string(res.status) + " "
                        + std::string{res.body});
        else if (measuring)
          ++counts_.cycles;
        next();
        return;
    }
  }

  api api_;
  std::string name_;
  int64_t ttl_ms_;
  state state_ = state::acquiring;
  steady::time_point sent_;
  std::string acquire_;       // the whole acquire request (fencelock)
  std::string etcd_lock_;     // the whole lock request (etcd), once the lease is known
  std::string release_target_;
  std::string release_prefix_;
  std::string body_;
  std::string chunked_;
};

// --- WebSocket cycles -------------------------------------------------------------------------

std::string acquire_frame(std::string_view id, std::string_view lock, std::string_view owner,
                          int64_t ttl_ms, int64_t wait_ms = 0) {
  std::string f;
  f.append(R"({"id":)").append(id).append(R"(,"op":"acquire","lock":")").append(lock);
  f.append(R"(","owner":")").append(owner).append(R"(","ttlMs":)").append(std::to_string(ttl_ms));
  if (wait_ms > 0)
    f.append(R"(,"waitMs":)").append(std::to_string(wait_ms));
  f.append("}");
  return f;
}

void append_release_frame(std::string& f, std::string_view id, std::string_view lock,
                          std::string_view owner, uint64_t token) {
  f.clear();
  f.append(R"({"id":)").append(id).append(R"(,"op":"release","lock":")").append(lock);
  f.append(R"(","owner":")").append(owner).append(R"(","token":)").append(to_text(token));
  f.append("}");
}

class ws_cycle final : public ws_conn {
public:
  ws_cycle(asio::io_context& ioc, endpoint ep, trial_shared& shared, tally& counts,
           std::string name, int pipeline, int64_t ttl_ms)
    : ws_conn(ioc, std::move(ep), shared, counts), owner_(name) {
    for (int i = 0; i < pipeline; ++i) {
      slot s;
      s.id = std::to_string(i);
      s.lock = name + ":" + s.id;
      s.acquire = acquire_frame(s.id, s.lock, owner_, ttl_ms);
      slots_.push_back(std::move(s));
    }
  }

private:
  struct slot {
    std::string id;
    std::string lock;
    std::string acquire;
    bool releasing = false;
    bool done = false;
    steady::time_point sent;
  };

  void on_open() override {
    mark_connected();
    for (auto& s : slots_)
      begin(s);
  }

  void begin(slot& s) {
    s.releasing = false;
    s.sent = steady::now();
    send_text(s.acquire);
  }

  void next(slot& s) {
    if (!shared_.stopping()) {
      begin(s);
      return;
    }
    s.done = true;
    if (++done_ == slots_.size())
      close();
  }

  void on_text(std::string_view frame) override {
    auto type = type_of(frame);
    bool granted = type == "granted";
    bool reply = type == "reply";
    bool error = type == "error";
    if (!granted && !reply && !error)
      return; // hello, or a push none of these requests asks for
    auto id = wire::find_uint(frame, "id");
    if (!id || *id >= slots_.size()) {
      counts_.error("a frame without a known id: " + std::string{frame});
      return;
    }
    auto& s = slots_[*id];
    if (s.done)
      return;
    bool measuring = shared_.measuring();
    if (measuring)
      counts_.latency.record((read_at() - s.sent).count());
    if (error) {
      counts_.error(frame);
      next(s);
      return;
    }
    if (granted && !s.releasing) {
      auto token = wire::find_uint(frame, "token");
      if (!token) {
        counts_.error("granted without a token: " + std::string{frame});
        next(s);
        return;
      }
      s.releasing = true;
      s.sent = steady::now();
      append_release_frame(frame_, s.id, s.lock, owner_, *token);
      send_text(frame_);
      return;
    }
    if (measuring)
      ++counts_.cycles;
    next(s);
  }

  std::string owner_;
  std::vector<slot> slots_;
  std::size_t done_ = 0;
  std::string frame_;
};

// --- one hot lock -----------------------------------------------------------------------------

class hot_client final : public ws_conn {
public:
  hot_client(asio::io_context& ioc, endpoint ep, trial_shared& shared, tally& counts,
             hot_shared& hot, int client, std::string lock, int64_t ttl_ms, int64_t wait_ms)
    : ws_conn(ioc, std::move(ep), shared, counts), hot_(hot), client_(client),
      lock_(std::move(lock)), owner_("hot-" + std::to_string(client)), ttl_ms_(ttl_ms),
      wait_ms_(wait_ms) {
  }

private:
  void on_open() override {
    mark_connected();
    acquire();
  }

  void acquire() {
    acquire_sent_ = steady::now();
    ++id_;
    send_text(acquire_frame(std::to_string(id_), lock_, owner_, ttl_ms_, wait_ms_));
  }

  void on_text(std::string_view frame) override {
    auto type = type_of(frame);
    if (type == "granted") {
      on_granted(frame);
    } else if (type == "reply") { // the release
      if (shared_.stopping())
        close();
      else
        acquire();
    } else if (type == "error") {
      // A wait that ran out (lock_held) is tried again; anything else is an error too.
      counts_.error(frame);
      if (shared_.stopping())
        close();
      else
        acquire();
    }
  }

  void on_granted(std::string_view frame) {
    auto at = read_at();
    bool measuring = shared_.measuring();
    if (hot_.release_sent) {
      if (measuring)
        hot_.handoff.record((at - *hot_.release_sent).count());
      hot_.release_sent.reset();
    } else if (measuring) {
      ++hot_.grants_without_release;
    }
    if (measuring) {
      ++hot_.grants[static_cast<std::size_t>(client_)];
      ++hot_.total_grants;
      hot_.wait.record((at - acquire_sent_).count());
      counts_.latency.record((at - acquire_sent_).count());
      ++counts_.cycles;
    }
    auto token = wire::find_uint(frame, "token");
    if (!token) {
      fail("granted without a token: " + std::string{frame});
      return;
    }
    ++id_;
    append_release_frame(frame_, std::to_string(id_), lock_, owner_, *token);
    send_text(frame_);
    hot_.release_sent = steady::now();
  }

  hot_shared& hot_;
  int client_;
  std::string lock_;
  std::string owner_;
  int64_t ttl_ms_;
  int64_t wait_ms_;
  uint64_t id_ = 0;
  steady::time_point acquire_sent_;
  std::string frame_;
};

// --- filling a server with held leases --------------------------------------------------------

class filler final : public ws_conn {
public:
  filler(asio::io_context& ioc, endpoint ep, trial_shared& shared, tally& counts,
         fill_shared& fill, int pipeline, int64_t ttl_ms)
    : ws_conn(ioc, std::move(ep), shared, counts), fill_(fill), pipeline_(pipeline),
      ttl_ms_(ttl_ms) {
  }

private:
  void on_open() override {
    mark_connected();
    for (int i = 0; i < pipeline_; ++i)
      take();
    if (open_ == 0)
      close();
  }

  void take() {
    auto i = fill_.next++;
    if (i >= fill_.end)
      return;
    send(i);
  }

  void send(uint64_t i) {
    ++open_;
    auto id = std::to_string(i);
    send_text(acquire_frame(id, fill_.prefix + id, "filler", ttl_ms_));
  }

  void on_text(std::string_view frame) override {
    auto type = type_of(frame);
    if (type != "granted" && type != "error")
      return;
    auto id = wire::find_uint(frame, "id");
    if (!id) {
      fail("a frame without an id: " + std::string{frame});
      return;
    }
    --open_;
    if (type == "error") {
      counts_.error(frame); // shed under the load it makes: ask again
      send(*id);
      return;
    }
    ++fill_.granted;
    take();
    if (open_ == 0)
      close();
  }

  fill_shared& fill_;
  int pipeline_;
  int64_t ttl_ms_;
  int open_ = 0;
};

} // namespace

std::shared_ptr<stream_conn> make_http_cycle(asio::io_context& ioc, endpoint ep,
                                             trial_shared& shared, tally& counts, api a,
                                             std::string name, int64_t ttl_ms) {
  return std::make_shared<http_cycle>(ioc, std::move(ep), shared, counts, a, std::move(name),
                                      ttl_ms);
}

std::shared_ptr<stream_conn> make_ws_cycle(asio::io_context& ioc, endpoint ep,
                                           trial_shared& shared, tally& counts, std::string name,
                                           int pipeline, int64_t ttl_ms) {
  return std::make_shared<ws_cycle>(ioc, std::move(ep), shared, counts, std::move(name),
                                    pipeline, ttl_ms);
}

std::shared_ptr<stream_conn> make_hot_client(asio::io_context& ioc, endpoint ep,
                                             trial_shared& shared, tally& counts,
                                             hot_shared& hot, int client, std::string lock,
                                             int64_t ttl_ms, int64_t wait_ms) {
  return std::make_shared<hot_client>(ioc, std::move(ep), shared, counts, hot, client,
                                      std::move(lock), ttl_ms, wait_ms);
}

std::shared_ptr<stream_conn> make_filler(asio::io_context& ioc, endpoint ep,
                                         trial_shared& shared, tally& counts, fill_shared& fill,
                                         int pipeline, int64_t ttl_ms) {
  return std::make_shared<filler>(ioc, std::move(ep), shared, counts, fill, pipeline, ttl_ms);
}

} // namespace fencelock::bench
