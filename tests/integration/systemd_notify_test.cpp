// The server's side of systemd's readiness protocol (Type=notify, app/systemd_notify.cpp), with a
// notification socket of the test's as $NOTIFY_SOCKET: READY=1 once the listener is up and the
// store answers, STOPPING=1 on SIGTERM. And log-level warn really writes nothing below warn:
// the port comes from the notification then, not from a "listening" line.

#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>

#include <csignal>

#include "integration/client_support.hpp"
#include "support/http_client.hpp"
#include "support/notify_socket.hpp"
#include "support/poll.hpp"
#include "support/server_process.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock::test;
using namespace std::chrono_literals;

namespace {

bool has_field(std::string_view message, std::string_view key, std::string_view value) {
  return notify_socket::field(message, key) == std::string{value};
}

} // namespace

TEST_CASE("systemd_notify_ready_then_stopping", "[integration][systemd]") {
  temp_dir dir;
  server_process server{dir.str()};
  auto& notes = server.notifications();
  auto ready = notes.wait_for([](std::string_view m) { return has_field(m, "READY", "1"); }, 30s);
  INFO(server.diagnostics());
  REQUIRE(ready.has_value());
  CHECK(parse_ready_port(*ready) == server.port());
  auto status = notify_socket::field(*ready, "STATUS").value_or("");
  CHECK(status.find("127.0.0.1:" + std::to_string(server.port())) != std::string::npos);
  // Ready means ready: the store answers and so does /readyz.
  http_client http{server.port()};
  CHECK(http.request("GET", "/readyz").status == 200);

  auto seen = notes.messages().size();
  server.process().send_signal(SIGTERM);
  CHECK(
    notes.wait_for([](std::string_view m) { return has_field(m, "STOPPING", "1"); }, 30s, seen));
  auto st = server.process().wait(30s);
  REQUIRE(st.has_value());
  CHECK(st->clean());
}

TEST_CASE("systemd_notify_not_ready_while_the_store_is_unreachable", "[integration][systemd]") {
  // A Redis store nobody listens for: the listener is up, the store does not answer, so the
  // service is not ready, and READY=1 must not be sent (systemd would start dependants).
  temp_dir dir;
  notify_socket notes;
  child_process server{server_binary(),
                       {"serve", "--port", "0", "--data-dir", dir.str(), "--store",
                        "redis://127.0.0.1:" + std::to_string(closed_port()) + "/0",
                        "--redis-timeout-ms", "200"},
                       {notes.env()}};
  auto waiting = notes.wait_for(
    [](std::string_view m) { return notify_socket::field(m, "STATUS").has_value(); }, 30s);
  INFO(server.diagnostics());
  REQUIRE(waiting.has_value());
  CHECK_FALSE(notify_socket::field(*waiting, "READY").has_value());
  CHECK_FALSE(notes.wait_for([](std::string_view m) { return has_field(m, "READY", "1"); }, 1s));
  server.send_signal(SIGTERM);
  auto st = server.wait(30s);
  REQUIRE(st.has_value());
  CHECK(st->clean());
}

TEST_CASE("log_level_warn_writes_nothing_below_warn", "[integration][logging]") {
  temp_dir dir;
  server_process server{dir.str(), {"--log-level", "warn"}};
  http_client http{server.port()};
  REQUIRE(http.request("POST", "/v1/locks/quiet/acquire", R"({"owner":"o","ttlMs":1000})").status
          == 200);
  auto st = server.terminate();
  REQUIRE(st.has_value());
  CHECK(st->clean());
  CHECK(eventually([&] { return server.process().stdout_closed(); }, 5s));
  // Neither the operation nor the lifecycle lines (listening, stopped) are at warn or above.
  for (const auto& line : server.lines()) {
    INFO(line);
    CHECK(line.find("\"level\":\"info\"") == std::string::npos);
  }
  CHECK(server.lines().empty());
}

TEST_CASE("log_level_info_writes_listening_and_stopped", "[integration][logging]") {
  temp_dir dir;
  server_process server{dir.str()};
  CHECK(server.wait_for_line([](std::string_view l) { return parse_listening_port(l).has_value(); },
                             30s));
  REQUIRE(server.terminate().has_value());
  CHECK(server.wait_for_line(
    [](std::string_view l) { return l.find("\"event\":\"stopped\"") != std::string_view::npos; },
    5s));
}
