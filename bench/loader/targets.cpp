#include "bench/loader/targets.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "bench/servers.hpp"
#include "support/child_process.hpp"
#include "support/free_port.hpp"
#include "support/http_client.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

namespace fencelock::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

endpoint loopback(uint16_t port) {
  return endpoint{tcp::endpoint{asio::ip::make_address("127.0.0.1"), port},
                  "127.0.0.1:" + std::to_string(port)};
}

/// A child process and the temp dir it works in (destroyed after the child).
struct child_in_dir {
  test::temp_dir dir;
  std::unique_ptr<test::child_process> proc;

  explicit child_in_dir(const std::string& prefix) : dir(prefix) {
  }
};

} // namespace

endpoint parse_url(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0)
    rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    throw std::runtime_error("only http:// URLs can be driven: " + url);
  if (auto slash = rest.find('/'); slash != std::string::npos)
    rest = rest.substr(0, slash);
  auto colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  asio::io_context ioc;
  tcp::resolver resolver{ioc};
  boost::system::error_code ec;
  auto found = resolver.resolve(host, port, ec);
  if (ec || found.empty())
    throw std::runtime_error("cannot resolve " + url + ": " + ec.message());
  return endpoint{found.begin()->endpoint(), host + ":" + port};
}

target start_fencelock(const std::vector<std::string>& args) {
  auto server = std::make_shared<bench_server>("loader", args);
  target t;
  t.name = "fencelock";
  t.endpoints.push_back(loopback(server->port()));
  t.pids.push_back(server->pid());
  t.store = "embedded";
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--store")
      t.store = args[i + 1].rfind("redis", 0) == 0 ? "redis" : args[i + 1];
  t.owned.push_back(std::move(server));
  return t;
}

target start_baseline_http() {
  auto proc = std::make_shared<test::child_process>(FENCELOCK_BASELINE_HTTP,
                                                    std::vector<std::string>{"--port", "0"});
  auto line = proc->wait_for_line(
    [](std::string_view l) { return test::parse_listening_port(l).has_value(); }, 10s);
  if (!line)
    throw std::runtime_error("baseline_http did not listen:\n" + proc->diagnostics());
  target t;
  t.name = "baseline-http";
  t.endpoints.push_back(loopback(*test::parse_listening_port(*line)));
  t.pids.push_back(proc->pid());
  t.owned.push_back(std::move(proc));
  return t;
}

std::string find_etcd() {
  if (const char* env = std::getenv("FENCELOCK_ETCD"); env != nullptr && *env)
    return ::access(env, X_OK) == 0 ? std::string{env} : std::string{};
  std::string dirs = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  dirs += ":/usr/bin:/usr/local/bin";
  std::istringstream is{dirs};
  for (std::string dir; std::getline(is, dir, ':');)
    if (!dir.empty() && ::access((dir + "/etcd").c_str(), X_OK) == 0)
      return dir + "/etcd";
  return {};
}

target start_etcd() {
  auto binary = find_etcd();
  if (binary.empty())
    throw std::runtime_error("etcd not found (install etcd-server, or set FENCELOCK_ETCD)");
  std::string last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto owned = std::make_shared<child_in_dir>("fencelock-etcd-");
    auto client = test::pick_free_port();
    auto peer = test::pick_free_port();
    auto client_url = "http://127.0.0.1:" + std::to_string(client);
    auto peer_url = "http://127.0.0.1:" + std::to_string(peer);
    owned->proc = std::make_unique<test::child_process>(
      binary, std::vector<std::string>{"--name", "bench", "--data-dir", owned->dir.str() + "/etcd",
                                       "--listen-client-urls", client_url,
                                       "--advertise-client-urls", client_url,
                                       "--listen-peer-urls", peer_url,
                                       "--initial-advertise-peer-urls", peer_url,
                                       "--initial-cluster", "bench=" + peer_url,
                                       "--logger", "zap", "--log-level", "error"});
    test::http_client http{client, test::http_options{2s, false}};
    bool healthy = test::eventually(
      [&] {
        if (!owned->proc->running())
          return true;
        auto res = http.try_request("GET", "/health");
        last = res ? res.response.describe() : res.what;
        return res && res.response.status == 200
               && res.response.body.find("\"true\"") != std::string::npos;
      },
      20s, 50ms);
    if (healthy && owned->proc->running()) {
      target t;
      t.name = "etcd";
      t.speaks = api::etcd;
      t.endpoints.push_back(loopback(client));
      t.pids.push_back(owned->proc->pid());
      t.store = "etcd";
      t.owned.push_back(std::move(owned));
      return t;
    }
    last += "\n" + owned->proc->diagnostics();
  }
  throw std::runtime_error("etcd did not get healthy: " + last);
}

target external(const std::vector<std::string>& urls) {
  target t;
  for (const auto& u : urls) {
    t.endpoints.push_back(parse_url(u));
    t.name += (t.name.empty() ? "" : ",") + u;
  }
  return t;
}

} // namespace fencelock::bench
