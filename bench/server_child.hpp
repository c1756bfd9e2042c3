#pragma once

// What the benchmarks that talk to a real `fencelock serve` over loopback share: the server as a
// child process (its own temp dir, killed with the bench), and blocking WebSocket and HTTP
// clients, one per thread.

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

namespace fencelock::bench {

/// Time the server has to print its "listening" line.
inline constexpr auto start_timeout = std::chrono::seconds{30};
/// Time the server has to exit on SIGTERM before it gets SIGKILL.
inline constexpr auto stop_timeout = std::chrono::seconds{10};

/// Returns the milliseconds since `t0` on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/*
 * `fencelock serve` as a child process on a free loopback port, with its store and its output
 * (one file) in a fresh temp dir `/tmp/fencelock-<name>-XXXXXX`. `binary` is the server's path;
 * `extra_args` are appended to `serve --port 0 --data-dir <dir> --log-level warn` (empty: none).
 * The constructor returns once the "listening" line names the port and throws std::runtime_error
 * (with the server's output) when it does not within start_timeout. The destructor stops the
 * server and removes the temp dir. The child gets SIGKILL when the bench dies.
 */
class server_child {
public:
  server_child(const std::string& binary, std::string_view name,
               const std::vector<std::string>& extra_args = {}) {
    std::string tmpl = "/tmp/fencelock-" + std::string{name} + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    log_ = dir_ / "server.log";
    std::vector<std::string> args{binary,         "serve",       "--port", "0", "--data-dir",
                                  dir_.string(), "--log-level", "warn"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (auto& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      remove_dir();
      throw std::runtime_error("cannot create " + log_.string());
    }
    auto parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Dies with the bench, even when the bench is killed. Only async-signal-safe calls here.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
      ::dup2(fd, STDOUT_FILENO); // dup2 clears O_CLOEXEC on the copies
      ::dup2(fd, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fd);
    if (pid_ < 0) {
      remove_dir();
      throw std::runtime_error("fork failed");
    }
    try {
      port_ = wait_for_port();
    } catch (...) {
      stop();
      remove_dir();
      throw;
    }
  }

  ~server_child() {
    stop();
    remove_dir();
  }

  server_child(const server_child&) = delete;
  server_child& operator=(const server_child&) = delete;

  /// Returns the port from the "listening" line.
  uint16_t port() const noexcept {
    return port_;
  }

  /// Returns the server's process id, or -1 once it was stopped or found gone.
  pid_t pid() const noexcept {
    return pid_;
  }

  /// Returns whether the server still runs; reaps it when it exited by itself.
  bool running() {
    if (pid_ <= 0)
      return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

  /// Stops the server: SIGTERM, and SIGKILL when it is still there after `grace`; reaps it.
  /// Does nothing when it was stopped already.
  void stop(std::chrono::milliseconds grace = stop_timeout) {
    if (pid_ <= 0)
      return;
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    pid_ = -1;
  }

  /// Returns everything the server wrote to stdout and stderr so far.
  std::string output() const {
    std::ifstream in{log_};
    return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  }

private:
  uint16_t wait_for_port() {
    auto deadline = std::chrono::steady_clock::now() + start_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in{log_};
      std::string line;
      while (std::getline(in, line)) {
        boost::system::error_code ec;
        auto v = boost::json::parse(line, ec); // a line still being written fails; read it later
        if (ec || !v.is_object())
          continue;
        const auto* event = v.as_object().if_contains("event");
        if (event != nullptr && event->is_string() && event->get_string() == "listening")
          return v.at("port").to_number<uint16_t>();
      }
      if (!running())
        throw std::runtime_error("the server exited before listening:\n" + output());
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    throw std::runtime_error("the server did not listen within 30 s:\n" + output());
  }

  void remove_dir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::filesystem::path dir_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

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
