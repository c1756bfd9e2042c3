// A fenced key-value store: the resource side of fencing as a small HTTP service. Every write
// carries the lock name and the fencing token its writer holds; a fence_guard (persisted in the
// data directory) rejects a token lower than the highest it has accepted for that lock, so a
// holder that paused past its lease cannot overwrite the next holder's work.
//
//   fencelock_fenced_store --data-dir DIR [--port 0] [--address 127.0.0.1]
//
//   PUT /kv/{key}   Fencing-Lock: <lock>   Fencing-Token: <token>   body = the value
//       200 {"key","token"}  409 {"error":"stale_token","highest":N}  400 invalid_request
//   GET /kv/{key}   200 {"key","value","token"}  404 {"error":"not_found"}
//   GET /stats      200 {"written":N,"stale":M}  (PUTs answered 200 / 409 since start)
//
// Prints {"event":"listening","port":N} on stdout when ready and {"event":"stopped"} after a
// clean stop on SIGINT or SIGTERM (exit 0). Exit 1 when it cannot start, 2 on bad flags.
//
// Disk: DIR/fence.log (file_fence_store), DIR/kv/v_<key> = "<token>\n<value>". A write goes to a
// unique temp file, is fsynced and renamed over the value, and the directory is fsynced, all
// inside fence_guard::guarded, so the check and the write are atomic per lock.
//
// Threads: `io_threads` threads run one io_context; each connection has its own strand. The
// guarded write (with its fsyncs) runs on the I/O thread of that connection; with several I/O
// threads a slow disk does not stall every connection. The main thread only waits for a signal.

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "fencelock/fence_guard.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using boost::system::error_code;
using tcp = asio::ip::tcp;

constexpr size_t io_threads = 4;
constexpr size_t max_connections = 256;
constexpr size_t body_limit = 1 << 20;
constexpr auto idle_timeout = std::chrono::seconds{30};

/// Returns whether `x` is 1..200 chars of [A-Za-z0-9._:-] (the lock-name alphabet; keys too).
bool valid_name(std::string_view x) {
  if (x.empty() || x.size() > 200)
    return false;
  for (char c : x)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.'
          || c == '_' || c == ':' || c == '-'))
      return false;
  return true;
}

/// Returns the positive decimal integer `x`, or nothing.
std::optional<uint64_t> parse_token(std::string_view x) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(x.data(), x.data() + x.size(), v);
  if (x.empty() || ec != std::errc{} || ptr != x.data() + x.size() || v == 0)
    return std::nullopt;
  return v;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

/// The values on disk. Thread-safe: each write uses its own temp file.
class kv_files {
public:
  /// Creates DIR/kv if needed and opens it for directory fsyncs; returns false on failure.
  bool open(const std::filesystem::path& dir) {
    dir_ = dir / "kv";
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      return false;
    dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return dir_fd_ >= 0;
  }

  ~kv_files() {
    if (dir_fd_ >= 0)
      ::close(dir_fd_);
  }

  /// Durably replaces `key`'s value: temp file, fsync, rename, directory fsync. Returns whether
  /// all of it worked. Runs on the calling I/O thread, under the lock's fence.
  bool write(const std::string& key, uint64_t token, std::string_view value) {
    auto path = file_of(key);
    auto tmp = dir_ / (".tmp-" + std::to_string(tmp_seq_.fetch_add(1)));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return false;
    bool ok = write_all(fd, std::to_string(token) + "\n") && write_all(fd, value)
              && ::fsync(fd) == 0;
    ok = ::close(fd) == 0 && ok;
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return false;
    }
    return ::fsync(dir_fd_) == 0;
  }

  /// Reads `key`'s value and the token it was written with; nothing when absent or unreadable.
  std::optional<std::pair<std::string, uint64_t>> read(const std::string& key) const {
    int fd = ::open(file_of(key).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return std::nullopt;
    std::string text;
    char buf[8192];
    for (;;) {
      auto n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        ::close(fd);
        if (n < 0)
          return std::nullopt;
        break;
      }
      text.append(buf, static_cast<size_t>(n));
    }
    auto eol = text.find('\n');
    if (eol == std::string::npos)
      return std::nullopt;
    auto token = parse_token(std::string_view{text}.substr(0, eol));
    if (!token)
      return std::nullopt;
    return std::make_pair(text.substr(eol + 1), *token);
  }

private:
  std::filesystem::path file_of(const std::string& key) const {
    return dir_ / ("v_" + key); // the prefix keeps "." and ".." keys ordinary names
  }

  std::filesystem::path dir_;
  int dir_fd_ = -1;
  std::atomic<uint64_t> tmp_seq_{0};
};

/// What every session shares.
struct shared_state {
  fencelock::fence_guard* guard = nullptr;
  kv_files* files = nullptr;
  std::atomic<size_t> connections{0};
  std::atomic<uint64_t> written{0};
  std::atomic<uint64_t> stale{0};
};

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

response answer(const request& req, http::status st, const json::object& body) {
  response res{st, req.version()};
  res.set(http::field::content_type, "application/json");
  res.body() = json::serialize(body);
  return res;
}

response bad_request(const request& req, std::string_view why) {
  return answer(req, http::status::bad_request,
                {{"error", "invalid_request"}, {"message", std::string{why}}});
}

/* Answers one request. Runs on the connection's I/O thread; a PUT blocks it for the guarded
 * write (fsync of the fence log, the value and the directory). */
response handle(shared_state& st, const request& req) {
  auto target = std::string_view{req.target()};
  if (target == "/stats" && req.method() == http::verb::get)
    return answer(req, http::status::ok,
                  {{"written", st.written.load()}, {"stale", st.stale.load()}});
  constexpr std::string_view prefix = "/kv/";
  if (target.substr(0, prefix.size()) != prefix)
    return answer(req, http::status::not_found, {{"error", "not_found"}});
  std::string key{target.substr(prefix.size())};
  if (!valid_name(key))
    return bad_request(req, "key must be 1..200 chars of [A-Za-z0-9._:-]");

  if (req.method() == http::verb::get) {
    auto v = st.files->read(key);
    if (!v)
      return answer(req, http::status::not_found, {{"error", "not_found"}});
    return answer(req, http::status::ok,
                  {{"key", key}, {"value", v->first}, {"token", v->second}});
  }
  if (req.method() != http::verb::put) {
    auto res = answer(req, http::status::method_not_allowed, {{"error", "method_not_allowed"}});
    res.set(http::field::allow, "GET, PUT");
    return res;
  }

  auto lock = std::string{req["Fencing-Lock"]};
  if (!valid_name(lock))
    return bad_request(req, "Fencing-Lock must be a lock name");
  auto token = parse_token(req["Fencing-Token"]);
  if (!token)
    return bad_request(req, "Fencing-Token must be a positive integer");

  auto d = st.guard->guarded(lock, *token,
                             [&] { return st.files->write(key, *token, req.body()); });
  switch (d.reason) {
    case fencelock::fence_reason::ok:
      st.written.fetch_add(1);
      return answer(req, http::status::ok, {{"key", key}, {"token", *token}});
    case fencelock::fence_reason::stale:
      st.stale.fetch_add(1);
      return answer(req, http::status::conflict,
                    {{"error", "stale_token"}, {"highest", d.highest}});
    case fencelock::fence_reason::write_failed:
      return answer(req, http::status::internal_server_error, {{"error", "write_failed"}});
    case fencelock::fence_reason::store_failed:
      return answer(req, http::status::service_unavailable, {{"error", "store_unavailable"}});
  }
  return answer(req, http::status::internal_server_error, {{"error", "internal"}});
}

/// One connection: read a request, answer it, repeat while keep-alive. Its handlers run on its
/// strand.
class session : public std::enable_shared_from_this<session> {
public:
  session(tcp::socket sock, shared_state& st) : stream_(std::move(sock)), st_(st) {
    // nop
  }

  ~session() {
    st_.connections.fetch_sub(1);
  }

  void run() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&session::do_read, shared_from_this()));
  }

private:
  void do_read() {
    parser_.emplace();
    parser_->body_limit(body_limit);
    stream_.expires_after(idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&session::on_read, shared_from_this()));
  }

  void on_read(error_code ec, size_t) {
    if (ec == http::error::body_limit) {
      request empty;
      res_ = answer(empty, http::status::payload_too_large, {{"error", "body_too_large"}});
      res_.keep_alive(false);
      return do_write();
    }
    if (ec)
      return close();
    auto req = parser_->release();
    res_ = handle(st_, req);
    res_.keep_alive(req.keep_alive());
    do_write();
  }

  void do_write() {
    res_.prepare_payload();
    http::async_write(stream_, res_,
                      beast::bind_front_handler(&session::on_write, shared_from_this()));
  }

  void on_write(error_code ec, size_t) {
    if (ec || !res_.keep_alive())
      return close();
    do_read();
  }

  void close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  response res_;
  shared_state& st_;
};

/// Accepts connections up to max_connections; beyond that it closes new ones at once.
class listener {
public:
  listener(asio::io_context& ioc, shared_state& st)
    : ioc_(ioc), acceptor_(asio::make_strand(ioc)), st_(st) {
    // nop
  }

  /// Binds and listens; returns the error, if any.
  error_code open(const std::string& address, uint16_t port) {
    error_code ec;
    auto addr = asio::ip::make_address(address, ec);
    if (ec)
      return ec;
    tcp::endpoint ep{addr, port};
    if (acceptor_.open(ep.protocol(), ec); ec)
      return ec;
    if (acceptor_.set_option(asio::socket_base::reuse_address(true), ec); ec)
      return ec;
    if (acceptor_.bind(ep, ec); ec)
      return ec;
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec)
      return ec;
    return {};
  }

  uint16_t port() const {
    error_code ec;
    return acceptor_.local_endpoint(ec).port();
  }

  void start() {
    do_accept();
  }

  /// Stops accepting; posted to the acceptor's strand. Callable from any thread.
  void stop() {
    asio::post(acceptor_.get_executor(), [this] {
      error_code ignored;
      acceptor_.close(ignored);
    });
  }

private:
  void do_accept() {
    acceptor_.async_accept(asio::make_strand(ioc_), [this](error_code ec, tcp::socket sock) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open())
        return;
      if (!ec) {
        if (st_.connections.fetch_add(1) >= max_connections) {
          st_.connections.fetch_sub(1);
          error_code ignored;
          sock.close(ignored);
        } else {
          std::make_shared<session>(std::move(sock), st_)->run();
        }
      }
      do_accept();
    });
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  shared_state& st_;
};

constexpr const char* usage =
  "usage: fencelock_fenced_store --data-dir DIR [--port N] [--address A]\n";

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

void print_event(const json::object& line) {
  std::cout << json::serialize(line) << std::endl;
}

int run(int argc, char** argv) {
  std::string data_dir;
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << usage;
      return 0;
    }
    if (i + 1 >= argc) {
      std::cerr << usage;
      return 2;
    }
    std::string_view value = argv[++i];
    if (arg == "--data-dir") {
      data_dir = value;
    } else if (arg == "--address") {
      address = value;
    } else if (arg == "--port") {
      unsigned p = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
      if (ec != std::errc{} || ptr != value.data() + value.size() || p > 65535) {
        std::cerr << "fenced_store: bad --port\n" << usage;
        return 2;
      }
      port = static_cast<uint16_t>(p);
    } else {
      std::cerr << "fenced_store: unknown flag " << arg << '\n' << usage;
      return 2;
    }
  }
  if (data_dir.empty()) {
    std::cerr << usage;
    return 2;
  }

  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  auto store = fencelock::file_fence_store::open(
    (std::filesystem::path{data_dir} / "fence.log").string(), ec);
  if (!store) {
    std::cerr << "fenced_store: cannot open the fence log: " << ec.message() << '\n';
    return 1;
  }
  fencelock::fence_guard guard{fencelock::fence_options{}, std::move(store)};
  if (auto err = guard.restore()) {
    std::cerr << "fenced_store: cannot read the fence log: " << err.message() << '\n';
    return 1;
  }
  kv_files files;
  if (!files.open(data_dir)) {
    std::cerr << "fenced_store: cannot open " << data_dir << "/kv\n";
    return 1;
  }

  shared_state st;
  st.guard = &guard;
  st.files = &files;
  asio::io_context ioc{static_cast<int>(io_threads)};
  listener lst{ioc, st};
  if (auto err = lst.open(address, port)) {
    std::cerr << "fenced_store: cannot listen: " << err.message() << '\n';
    return 1;
  }
  lst.start();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < io_threads; ++i)
    threads.emplace_back([&ioc] { ioc.run(); });
  print_event({{"event", "listening"}, {"port", lst.port()}});

  // The stop signals were blocked in main() before any thread existed; only sigwait sees them.
  auto signals = stop_signals();
  int sig = 0;
  if (sigwait(&signals, &sig) != 0)
    sig = 0;
  lst.stop();
  // A handler in progress (a guarded write) finishes; queued ones are dropped with the context.
  ioc.stop();
  for (auto& t : threads)
    t.join();
  print_event({{"event", "stopped"}, {"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fenced_store: fatal: " << e.what() << '\n';
    return 1;
  }
}
