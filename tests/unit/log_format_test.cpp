// actors/oplog: the same log line as JSON (default) or as text for a terminal.

#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include "common/log.hpp"

using namespace fencelock;

namespace {

boost::json::object sample_line() {
  return {{"ts", "2026-11-29T21:04:05.123Z"},
          {"level", "info"},
          {"event", "op"},
          {"op", "acquire"},
          {"owner", "worker 1"},
          {"token", 42},
          {"outcome", "ok"}};
}

// Restores the default for the tests that follow, whatever happens.
struct format_guard {
  ~format_guard() {
    set_log_format(log_format::json);
  }
};

} // namespace

TEST_CASE("log lines are JSON objects by default") {
  format_guard guard;
  set_log_format(log_format::json);
  auto text = render_log_line(sample_line());
  CHECK(boost::json::parse(text).as_object() == sample_line());
}

TEST_CASE("the text format leads with ts, level and event, then key=value pairs") {
  format_guard guard;
  set_log_format(log_format::text);
  CHECK(render_log_line(sample_line())
        == R"(2026-11-29T21:04:05.123Z info op op=acquire owner="worker 1" token=42 outcome=ok)");
}
