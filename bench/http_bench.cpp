// HTTP acquire+release cycles per second against the same server's trivial endpoint
// (two GET /healthz per cycle), run side by side: the ratio is what the lock path costs on top
// of HTTP itself. Server and clients share the machine's cores, as they would on one host.
//
//   build/bench/http_bench [seconds-per-trial=2] [rounds=3]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <spdlog/spdlog.h>

#include "bench/side_by_side.hpp"
#include "fencelock/messages.hpp"
#include "fencelock/service.hpp"
#include "net/http_server.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// One keep-alive connection; each call is one request and its response.
class client {
public:
  explicit client(uint16_t port) : stream_(ioc_) {
    stream_.connect(tcp::endpoint{boost::asio::ip::make_address("127.0.0.1"), port});
  }

  http::response<http::string_body> call(http::verb verb, const std::string& target,
                                         std::string body = {}) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = std::move(body);
    }
    req.prepare_payload();
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buffer_, res);
    return res;
  }

private:
  boost::asio::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

enum class workload { lock_cycle, healthz_pair };

double trial(uint16_t port, workload w, int clients, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> threads;
  static std::atomic<uint64_t> run_id{0};
  auto run = run_id++;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      client c{port};
      auto name = "bench:" + std::to_string(run) + ":" + std::to_string(i);
      while (!stop.load()) {
        if (w == workload::healthz_pair) {
          auto a = c.call(http::verb::get, "/healthz");
          auto b = c.call(http::verb::get, "/healthz");
          if (a.result_int() != 200 || b.result_int() != 200)
            ++failures;
        } else {
          auto acq = c.call(http::verb::post, "/v1/locks/" + name + "/acquire",
                            R"({"owner":"bench","ttlMs":10000})");
          if (acq.result_int() != 200) {
            ++failures;
            continue;
          }
          auto token = boost::json::parse(acq.body()).at("token").as_int64();
          auto rel = c.call(http::verb::post, "/v1/locks/" + name + "/release",
                            R"({"owner":"bench","token":)" + std::to_string(token) + "}");
          if (rel.result_int() != 200)
            ++failures;
        }
        ++cycles;
      }
    });
  }
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto n = cycles.load();
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  for (auto& t : threads)
    t.join();
  if (failures.load() > 0)
    std::fprintf(stderr, "warning: %llu failed cycles\n",
                 static_cast<unsigned long long>(failures.load()));
  return n / elapsed;
}

} // namespace

int main(int argc, char** argv) {
  auto [seconds, rounds] = fencelock::bench::parse_plan(argc, argv);
  using fencelock::bench::median;
  spdlog::set_level(spdlog::level::off); // measure the service, not the log sink
  char tmpl[] = "/tmp/fencelock-httpbench-XXXXXX";
  std::filesystem::path dir = mkdtemp(tmpl);
  caf::actor_system_config cfg;
  fencelock::add_message_types(cfg);
  caf::actor_system sys{cfg};
  fencelock::config conf;
  conf.port = 0;
  conf.data_dir = dir.string();
  fencelock::service svc{sys, conf};
  if (auto err = svc.start()) {
    std::fprintf(stderr, "start failed: %s\n", to_string(err).c_str());
    return 1;
  }
  fencelock::net::http_server server{svc, conf};
  if (auto err = server.start()) {
    std::fprintf(stderr, "listen failed: %s\n", to_string(err).c_str());
    return 1;
  }
  std::printf("HTTP cycles/s, keep-alive connections (median of %d alternating rounds, %.1f s each)\n"
              "a cycle = acquire+release, or two GET /healthz\n",
              rounds, seconds);
  std::printf("%8s %14s %14s %10s\n", "clients", "healthz-pair", "lock-cycle", "ratio");
  for (int clients : {1, 8, 32}) {
    std::vector<double> trivial, locks;
    for (int r = 0; r < rounds; ++r) {
      trivial.push_back(trial(server.port(), workload::healthz_pair, clients, seconds));
      locks.push_back(trial(server.port(), workload::lock_cycle, clients, seconds));
    }
    auto t = median(trivial);
    auto l = median(locks);
    std::printf("%8d %14.0f %14.0f %10.3f\n", clients, t, l, l / t);
    std::fflush(stdout);
  }
  server.stop();
  svc.stop();
  std::filesystem::remove_all(dir);
}
