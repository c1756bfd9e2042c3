// baseline_http: the HTTP ceiling of the benchmark suite. A trivial Boost.Beast JSON server with
// the session shape of fencelock's own (net/http_session.cpp): one I/O thread by default, a
// strand per connection, keep-alive, a header and body limit, a timeout armed per request, the
// JSON body parsed and a JSON body serialized for the answer. It answers fencelock's two lock
// paths with bodies of the same shape, and keeps no state but a counter: what fencelock costs on
// top of it is the lock service.
//
//   baseline_http [--port 0] [--threads 1]
//
// POST /v1/locks/{name}/acquire {"owner", "ttlMs"} -> 200 {"name","owner","token","ttlMs","expiresAt"}
// POST /v1/locks/{name}/release {"owner", "token"} -> 200 {"released": true}
// anything else -> 404 {"error":"not_found"}. Prints {"event":"listening","port":N} when ready.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

std::atomic<uint64_t> next_token{1};

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// One keep-alive connection on its own strand, one request at a time.
class session : public std::enable_shared_from_this<session> {
public:
  explicit session(tcp::socket&& socket) : stream_(std::move(socket)) {
  }

  void run() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&session::do_read, shared_from_this()));
  }

private:
  void do_read() {
    parser_.emplace();
    parser_->header_limit(8 * 1024);
    parser_->body_limit(16 * 1024);
    stream_.expires_after(std::chrono::seconds{10});
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec)
      return close();
    auto req = parser_->release();
    res_ = {};
    res_.version(req.version());
    res_.keep_alive(req.keep_alive());
    res_.set(http::field::content_type, "application/json");
    answer(req);
    res_.prepare_payload();
    stream_.expires_after(std::chrono::seconds{10});
    http::async_write(stream_, res_,
                      beast::bind_front_handler(&session::on_write, shared_from_this()));
  }

  void answer(const http::request<http::string_body>& req) {
    std::string_view target = req.target();
    constexpr std::string_view prefix = "/v1/locks/";
    auto slash = target.rfind('/');
    boost::system::error_code ec;
    auto body = json::parse(req.body(), ec);
    if (req.method() != http::verb::post || target.substr(0, prefix.size()) != prefix
        || slash <= prefix.size() || ec || !body.is_object()) {
      res_.result(http::status::not_found);
      res_.body() = R"({"error":"not_found","message":"no such path"})";
      return;
    }
    auto name = target.substr(prefix.size(), slash - prefix.size());
    auto op = target.substr(slash + 1);
    const auto& in = body.get_object();
    const auto* owner = in.if_contains("owner");
    if (owner == nullptr || !owner->is_string()) {
      res_.result(http::status::bad_request);
      res_.body() = R"({"error":"invalid_request","message":"owner"})";
      return;
    }
    res_.result(http::status::ok);
    if (op == "acquire") {
      const auto* ttl = in.if_contains("ttlMs");
      auto ttl_ms = ttl != nullptr && ttl->is_int64() ? ttl->get_int64() : 0;
      res_.body() = json::serialize(json::object{{"name", name},
                                                 {"owner", owner->get_string()},
                                                 {"token", next_token++},
                                                 {"ttlMs", ttl_ms},
                                                 {"expiresAt", wall_ms() + ttl_ms}});
    } else {
      res_.body() = json::serialize(json::object{{"released", true}});
    }
  }

  void on_write(beast::error_code ec, std::size_t) {
    if (ec || !res_.keep_alive())
      return close();
    do_read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
};

class listener : public std::enable_shared_from_this<listener> {
public:
  listener(asio::io_context& ioc, uint16_t port) : ioc_(ioc), acceptor_(asio::make_strand(ioc)) {
    tcp::endpoint ep{asio::ip::make_address("127.0.0.1"), port};
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
  }

  uint16_t port() const {
    return acceptor_.local_endpoint().port();
  }

  void run() {
    acceptor_.async_accept(asio::make_strand(ioc_),
                           beast::bind_front_handler(&listener::on_accept, shared_from_this()));
  }

private:
  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay{true}, ec);
      std::make_shared<session>(std::move(socket))->run();
    }
    run();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
};

} // namespace

int main(int argc, char** argv) {
  uint16_t port = 0;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0)
      port = static_cast<uint16_t>(std::stoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--threads") == 0)
      threads = std::max(1, std::stoi(argv[i + 1]));
  }
  asio::io_context ioc{threads};
  auto l = std::make_shared<listener>(ioc, port);
  l->run();
  asio::signal_set stop{ioc, SIGINT, SIGTERM};
  stop.async_wait([&](auto, int) { ioc.stop(); });
  std::printf("{\"event\":\"listening\",\"port\":%u}\n", static_cast<unsigned>(l->port()));
  std::fflush(stdout);
  std::vector<std::thread> extra;
  for (int i = 1; i < threads; ++i)
    extra.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : extra)
    t.join();
  return 0;
}
