#include "support/redis_server.hpp"

#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "support/poll.hpp"

namespace fencelock::test {

using namespace std::chrono_literals;

std::optional<std::string> find_redis_server() {
  if (const char* env = std::getenv("FENCELOCK_REDIS_SERVER")) {
    if (::access(env, X_OK) == 0)
      return std::string{env};
    return std::nullopt;
  }
  std::string dirs = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  dirs += ":/usr/local/sbin:/usr/sbin:/sbin:/usr/bin";
  std::istringstream is{dirs};
  for (std::string dir; std::getline(is, dir, ':');) {
    if (dir.empty())
      continue;
    auto candidate = dir + "/redis-server";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

std::optional<std::string> redis_server_or_skip() {
  auto bin = find_redis_server();
  if (!bin) {
    const char* env = std::getenv("FENCELOCK_REDIS_SERVER");
    std::cout << "SKIPPED: redis-server not found ("
              << (env != nullptr ? "FENCELOCK_REDIS_SERVER=" + std::string{env}
                                     + " is not executable"
                                 : std::string{"not on PATH; install redis-server"})
              << ")" << std::endl;
  }
  return bin;
}

std::string require_redis_server() {
  auto bin = find_redis_server();
  if (!bin)
    throw std::runtime_error("redis-server not found: run scripts/install-deps.sh (or set "
                             "FENCELOCK_REDIS_SERVER)");
  return *bin;
}

redis_connection::redis_connection(uint16_t port) {
  timeval tv{2, 0};
  ctx_.reset(redisConnectWithTimeout("127.0.0.1", port, tv));
  if (!ctx_)
    throw std::runtime_error("redisConnect: out of memory");
  if (ctx_->err != 0)
    throw std::runtime_error("redisConnect to port " + std::to_string(port) + ": "
                             + ctx_->errstr);
  timeval cmd_tv{10, 0};
  redisSetTimeout(ctx_.get(), cmd_tv);
}

reply_ptr redis_connection::call(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> argvlen;
  for (const auto& a : args) {
    argv.push_back(a.data());
    argvlen.push_back(a.size());
  }
  reply_ptr reply{static_cast<redisReply*>(redisCommandArgv(
    ctx_.get(), static_cast<int>(args.size()), argv.data(), argvlen.data()))};
  if (!reply)
    throw std::runtime_error("redis " + args.front() + ": " + ctx_->errstr);
  return reply;
}

std::optional<std::string> redis_connection::get(const std::string& key) {
  auto r = call({"GET", key});
  if (r->type == REDIS_REPLY_NIL)
    return std::nullopt;
  if (r->type != REDIS_REPLY_STRING)
    throw std::runtime_error("GET " + key + ": unexpected reply type " + std::to_string(r->type));
  return std::string{r->str, r->len};
}

redis_server::redis_server(std::string binary, options opts)
  : binary_(std::move(binary)), opts_(opts) {
  std::string last_error;
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = pick_free_port();
    if (launch(last_error))
      return;
  }
  throw std::runtime_error("redis-server did not answer PING: " + last_error);
}

bool redis_server::launch(std::string& why) {
  std::vector<std::string> args{"--port",        std::to_string(port_),
                                "--bind",        "127.0.0.1",
                                "--save",        "",
                                "--daemonize",   "no",
                                "--dir",         dir_.str(),
                                "--appendonly",  opts_.aof ? "yes" : "no",
                                "--appendfsync", "always"};
  if (!opts_.password.empty()) {
    args.push_back("--requirepass");
    args.push_back(opts_.password);
  }
  proc_ = std::make_unique<child_process>(binary_, std::move(args));
  bool up = eventually(
    [&] {
      if (!proc_->running())
        return true; // exited (lost the port to someone else, say): stop waiting
      try {
        redis_connection conn{port_};
        if (!opts_.password.empty())
          conn.call({"AUTH", opts_.password});
        auto r = conn.call({"PING"});
        return r->type == REDIS_REPLY_STATUS && std::string_view{r->str, r->len} == "PONG";
      } catch (const std::exception& e) {
        why = e.what();
        return false;
      }
    },
    10s, 20ms);
  if (up && proc_->running())
    return true;
  why += "\n" + proc_->diagnostics();
  proc_.reset(); // kills and reaps it
  return false;
}

void redis_server::sigkill() {
  if (proc_)
    proc_->kill();
}

void redis_server::restart() {
  proc_.reset();
  std::string why;
  // The port was ours a moment ago; another process could take it, but only by bad luck.
  for (int attempt = 0; attempt < 3; ++attempt)
    if (launch(why))
      return;
  throw std::runtime_error("redis-server did not come back: " + why);
}

void redis_server::restart_empty() {
  proc_.reset();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator{dir_.path(), ec})
    std::filesystem::remove_all(entry.path(), ec);
  restart();
}

} // namespace fencelock::test
