#include "support/fenced_resource.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace fencelock::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using boost::system::error_code;
using tcp = asio::ip::tcp;

struct fenced_resource::server {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  fenced_resource* owner = nullptr;

  // One connection: read a request, answer it, repeat while keep-alive. Runs on the server
  // thread only.
  struct session : std::enable_shared_from_this<session> {
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::response<http::string_body> res;
    fenced_resource* owner;

    session(tcp::socket sock, fenced_resource* o) : stream(std::move(sock)), owner(o) {
      // nop
    }

    void do_read() {
      req = {};
      stream.expires_after(std::chrono::seconds{60});
      http::async_read(stream, buffer, req,
                       beast::bind_front_handler(&session::on_read, shared_from_this()));
    }

    void on_read(error_code ec, size_t) {
      if (ec)
        return close();
      res = handle();
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::async_write(stream, res,
                        beast::bind_front_handler(&session::on_write, shared_from_this()));
    }

    void on_write(error_code ec, size_t) {
      if (ec || !res.keep_alive())
        return close();
      do_read();
    }

    void close() {
      error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }

    http::response<http::string_body> answer(http::status st, json::object body) {
      http::response<http::string_body> r{st, req.version()};
      r.set(http::field::content_type, "application/json");
      r.body() = json::serialize(body);
      return r;
    }

    http::response<http::string_body> handle() {
      if (req.method() != http::verb::post || req.target() != "/write")
        return answer(http::status::not_found, {{"error", "not_found"}});
      error_code ec;
      auto v = json::parse(req.body(), ec);
      if (ec || !v.is_object())
        return answer(http::status::bad_request, {{"error", "invalid_request"}});
      const auto& obj = v.as_object();
      auto* lock = obj.if_contains("lock");
      auto* token = obj.if_contains("token");
      auto* data = obj.if_contains("data");
      if (lock == nullptr || !lock->is_string() || token == nullptr
          || !(token->is_uint64() || (token->is_int64() && token->as_int64() >= 0))
          || data == nullptr || !data->is_string())
        return answer(http::status::bad_request, {{"error", "invalid_request"}});
      uint64_t t = token->is_uint64() ? token->as_uint64() : static_cast<uint64_t>(token->as_int64());
      uint64_t highest = 0;
      if (owner->write(std::string{lock->as_string()}, t, std::string{data->as_string()},
                       &highest))
        return answer(http::status::ok, {{"ok", true}, {"highestToken", highest}});
      return answer(http::status::conflict, {{"error", "stale_token"}, {"highestToken", highest}});
    }
  };

  void do_accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket sock) {
      if (ec)
        return; // operation_aborted on shutdown
      std::make_shared<session>(std::move(sock), owner)->do_read();
      do_accept();
    });
  }
};

fenced_resource::fenced_resource() : server_(std::make_unique<server>()) {
  server_->owner = this;
  auto& acc = server_->acceptor;
  tcp::endpoint ep{asio::ip::make_address_v4("127.0.0.1"), 0};
  acc.open(ep.protocol());
  acc.set_option(asio::socket_base::reuse_address(true));
  acc.bind(ep);
  acc.listen();
  port_ = acc.local_endpoint().port();
  server_->do_accept();
  thread_ = std::thread{[this] { server_->ioc.run(); }};
}

fenced_resource::~fenced_resource() {
  server_->ioc.stop();
  if (thread_.joinable())
    thread_.join();
}

std::optional<fenced_resource::entry> fenced_resource::get(const std::string& lock) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = entries_.find(lock);
  if (i == entries_.end())
    return std::nullopt;
  return i->second;
}

bool fenced_resource::write(const std::string& lock, uint64_t token, const std::string& data,
                            uint64_t* highest) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& e = entries_[lock];
  auto record = std::to_string(token) + ":" + data;
  bool ok = token >= e.highest_token;
  if (ok) {
    e.highest_token = token;
    e.content = data;
    e.accepted.push_back(std::move(record));
  } else {
    e.rejected.push_back(std::move(record));
  }
  if (highest != nullptr)
    *highest = e.highest_token;
  return ok;
}

} // namespace fencelock::test
