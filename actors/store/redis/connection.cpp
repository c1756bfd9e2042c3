#include "actors/store/redis/connection.hpp"

#include <algorithm>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace fencelock::redis {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// A subscriber connection's published messages arrive without a command that asked for them.
bool is_push(const value& v) {
  return v.type == value::kind::array && !v.elements.empty()
         && (v.elements[0].is("message") || v.elements[0].is("pmessage"));
}

} // namespace

std::string encode(const command& cmd) {
  std::string out = "*" + std::to_string(cmd.size()) + "\r\n";
  for (auto& arg : cmd) {
    out += "$" + std::to_string(arg.size()) + "\r\n";
    out += arg;
    out += "\r\n";
  }
  return out;
}

std::shared_ptr<connection> connection::make(asio::io_context& io, settings s,
                                             state_handler on_state, push_handler on_push) {
  return std::shared_ptr<connection>(
    new connection(io, std::move(s), std::move(on_state), std::move(on_push)));
}

connection::connection(asio::io_context& io, settings s, state_handler on_state,
                       push_handler on_push)
  : io_(io),
    settings_(std::move(s)),
    on_state_(std::move(on_state)),
    on_push_(std::move(on_push)),
    resolver_(io),
    socket_(io),
    reconnect_timer_(io),
    timeout_timer_(io),
    keepalive_timer_(io),
    backoff_(settings_.backoff_min) {
}

connection::~connection() = default;

void connection::start() {
  asio::post(io_, [self = shared_from_this()] { self->connect(); });
}

void connection::stop() {
  asio::post(io_, [self = shared_from_this()] {
    self->fail("stopped");
    self->stopped_ = true;
    self->reconnect_timer_.cancel();
    self->keepalive_timer_.cancel();
  });
}

void connection::send(command cmd, reply_handler done) {
  asio::post(io_, [self = shared_from_this(), cmd = std::move(cmd), done = std::move(done)]() mutable {
    self->do_send(std::move(cmd), std::move(done));
  });
}

void connection::reset(std::string why) {
  asio::post(io_, [self = shared_from_this(), why = std::move(why)] { self->fail(why); });
}

bool connection::up() const noexcept {
  return up_.load();
}

void connection::do_send(command cmd, reply_handler done) {
  if (!up_.load()) {
    done(outcome{std::nullopt, "redis is not connected"});
    return;
  }
  outbox_ += encode(cmd);
  pending_.push_back(pending{std::move(done), std::chrono::steady_clock::now()});
  flush();
  arm_timeout();
}

void connection::connect() {
  if (stopped_)
    return;
  auto gen = ++generation_;
  // Connecting counts against the same timeout as a command.
  timeout_timer_.expires_after(settings_.timeout);
  timeout_timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (!ec && gen == self->generation_ && !self->connected_)
      self->fail("connect timed out");
  });
  resolver_.async_resolve(
    settings_.where.host, std::to_string(settings_.where.port),
    [self = shared_from_this(), gen](boost::system::error_code ec, tcp::resolver::results_type rs) {
      if (gen != self->generation_ || self->stopped_)
        return;
      if (ec)
        return self->fail("resolve " + self->settings_.where.host + ": " + ec.message());
      asio::async_connect(self->socket_, rs,
                          [self, gen](boost::system::error_code ec2, const tcp::endpoint&) {
                            if (gen != self->generation_ || self->stopped_)
                              return;
                            if (ec2)
                              return self->fail("connect: " + ec2.message());
                            self->on_connected();
                          });
    });
}

void connection::on_connected() {
  connected_ = true;
  timeout_timer_.cancel();
  socket_.set_option(tcp::no_delay{true});
  reader_ = std::make_unique<reply_reader>();
  last_activity_ = std::chrono::steady_clock::now();
  read();
  send_setup();
}

// AUTH, SELECT and the set-up commands go out as one pipeline; the connection is up once the
// last of them succeeded.
void connection::send_setup() {
  std::vector<command> cmds;
  auto& w = settings_.where;
  if (!w.password.empty()) {
    if (w.user.empty())
      cmds.push_back({"AUTH", w.password});
    else
      cmds.push_back({"AUTH", w.user, w.password});
  }
  if (w.db != 0)
    cmds.push_back({"SELECT", std::to_string(w.db)});
  for (auto& c : settings_.setup)
    cmds.push_back(c);
  if (cmds.empty())
    cmds.push_back({"PING"});
  auto gen = generation_;
  auto left = std::make_shared<size_t>(cmds.size());
  for (auto& c : cmds) {
    outbox_ += encode(c);
    // Never log the command: AUTH carries the password.
    auto what = c.front();
    pending_.push_back(pending{
      [self = shared_from_this(), gen, left, what](outcome o) {
        if (gen != self->generation_)
          return;
        if (!o)
          return; // the failure that caused this is being handled already
        if (o.reply->is_error())
          return self->fail(what + " failed: " + o.reply->str.substr(0, 200));
        if (--*left == 0) {
          self->backoff_ = self->settings_.backoff_min;
          self->up_.store(true);
          self->note(log_level::info, "redis_up",
                     {{"role", self->settings_.role},
                      {"host", self->settings_.where.host},
                      {"port", self->settings_.where.port}});
          if (self->on_state_)
            self->on_state_(true, {});
          self->arm_keepalive();
        }
      },
      std::chrono::steady_clock::now()});
  }
  flush();
  arm_timeout();
}

void connection::read() {
  socket_.async_read_some(
    asio::buffer(read_buf_),
    [self = shared_from_this(), gen = generation_](boost::system::error_code ec, size_t n) {
      if (gen != self->generation_)
        return;
      if (ec)
        return self->fail(ec == asio::error::eof ? std::string{"connection closed by redis"}
                                                 : "read: " + ec.message());
      self->last_activity_ = std::chrono::steady_clock::now();
      if (!self->reader_->feed({self->read_buf_.data(), n}))
        return self->fail("protocol error: " + self->reader_->error());
      for (;;) {
        std::optional<value> v;
        if (!self->reader_->next(v))
          return self->fail("protocol error: " + self->reader_->error());
        if (!v)
          break;
        self->on_reply(std::move(*v));
        if (gen != self->generation_)
          return; // a reply handler dropped the connection
      }
      self->read();
    });
}

void connection::on_reply(value v) {
  if (on_push_ && is_push(v)) {
    on_push_(v);
    return;
  }
  if (pending_.empty())
    return fail("reply without a command: " + describe(v));
  auto p = std::move(pending_.front());
  pending_.pop_front();
  p.done(outcome{std::move(v), {}});
}

void connection::flush() {
  if (write_in_flight_ || outbox_.empty() || !connected_)
    return;
  write_in_flight_ = true;
  writing_ = std::exchange(outbox_, {});
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this(), gen = generation_](boost::system::error_code ec,
                                                                   size_t) {
                      if (gen != self->generation_)
                        return;
                      self->write_in_flight_ = false;
                      if (ec)
                        return self->fail("write: " + ec.message());
                      self->flush();
                    });
}

// The oldest pending command decides: once it has waited `timeout`, Redis is too slow or gone.
void connection::arm_timeout() {
  if (timeout_armed_ || pending_.empty())
    return;
  timeout_armed_ = true;
  timeout_timer_.expires_at(pending_.front().sent + settings_.timeout);
  timeout_timer_.async_wait([self = shared_from_this(), gen = generation_](boost::system::error_code) {
    if (gen != self->generation_)
      return;
    self->timeout_armed_ = false;
    if (self->pending_.empty())
      return;
    if (std::chrono::steady_clock::now() - self->pending_.front().sent >= self->settings_.timeout)
      return self->fail("no reply within " + std::to_string(self->settings_.timeout.count())
                        + " ms");
    self->arm_timeout();
  });
}

void connection::arm_keepalive() {
  if (settings_.keepalive.count() <= 0)
    return;
  keepalive_timer_.expires_after(settings_.keepalive);
  keepalive_timer_.async_wait([self = shared_from_this(), gen = generation_](boost::system::error_code ec) {
    if (ec || gen != self->generation_ || !self->up_.load())
      return;
    if (std::chrono::steady_clock::now() - self->last_activity_ >= self->settings_.keepalive)
      self->do_send({"PING"}, [](outcome) {});
    self->arm_keepalive();
  });
}

void connection::fail(const std::string& why) {
  if (stopped_)
    return;
  bool was_up = up_.exchange(false);
  bool was_connecting = !was_up;
  ++generation_;
  connected_ = false;
  timeout_armed_ = false;
  write_in_flight_ = false;
  outbox_.clear();
  boost::system::error_code ignored;
  resolver_.cancel();
  socket_.close(ignored);
  timeout_timer_.cancel();
  keepalive_timer_.cancel();
  auto failed = std::exchange(pending_, {});
  for (auto& p : failed)
    p.done(outcome{std::nullopt, "redis: " + why});
  if (was_up) {
    note(log_level::warn, "redis_down", {{"role", settings_.role}, {"reason", why}});
    if (on_state_)
      on_state_(false, why);
  } else if (was_connecting && backoff_ == settings_.backoff_min) {
    // Logged once per outage, not on every retry.
    note(log_level::warn, "redis_unreachable", {{"role", settings_.role}, {"reason", why}});
    if (on_state_)
      on_state_(false, why);
  }
  if (why != "stopped")
    schedule_reconnect();
}

void connection::note(log_level level, std::string_view event,
                      const boost::json::object& fields) {
  if (settings_.note)
    settings_.note(level, event, fields);
}

void connection::schedule_reconnect() {
  if (stopped_)
    return;
  auto delay = backoff_;
  backoff_ = std::min(backoff_ * 2, settings_.backoff_max);
  reconnect_timer_.expires_after(delay);
  reconnect_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec)
      self->connect();
  });
}

} // namespace fencelock::redis
