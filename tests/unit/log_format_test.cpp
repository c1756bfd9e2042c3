// actors/oplog: the same log line as JSON (default) or as text for a terminal.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

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

TEST_CASE("a JSON log line holds ts, level and event, then the fields in their order") {
  format_guard guard;
  set_log_format(log_format::json);
  auto text =
    log_line(log_level::warn, "op",
             {{"op", "acquire"}, {"owner", "worker \"1\"\n"}, {"token", 42}, {"ok", true}});
  CHECK(text.find('\n') == std::string::npos); // one line, whatever the values hold
  auto line = boost::json::parse(text).as_object();
  std::vector<std::string> keys;
  for (const auto& [key, value] : line)
    keys.emplace_back(key);
  CHECK(keys == std::vector<std::string>{"ts", "level", "event", "op", "owner", "token", "ok"});
  auto ts = line["ts"].as_string();
  CHECK(ts.size() == 24); // 2026-11-29T21:04:05.123Z
  CHECK(ts.back() == 'Z');
  CHECK(line["level"] == "warn");
  CHECK(line["event"] == "op");
  CHECK(line["owner"] == "worker \"1\"\n");
  CHECK(line["token"] == 42);
  CHECK(line["ok"] == true);
}

TEST_CASE("a field named like a head field replaces its value in place") {
  format_guard guard;
  set_log_format(log_format::json);
  auto line =
    boost::json::parse(log_line(log_level::info, "op", {{"event", "other"}, {"n", 1}})).as_object();
  CHECK(line.size() == 4);
  CHECK(line["event"] == "other");
  CHECK(line["n"] == 1);
}

namespace {

// The same fields through the builder and through the object renderer, with the timestamps set
// aside.
void check_builder_matches(log_format format) {
  format_guard guard;
  set_log_format(format);
  std::string tricky = "a \"quoted\" \\ back\tslash\n\x01 \xc3\xa9";
  auto built = log_line_builder{log_level::info, "op"}
                 .add("op", "acquire")
                 .add("owner", tricky)
                 .add("plain", "worker-1")
                 .add("empty", "")
                 .add("token", uint64_t{18446744073709551615u})
                 .add("latency_us", int64_t{-3})
                 .add_value("flag", true)
                 .add_value("nothing", nullptr)
                 .add_value("quoted", boost::json::value(tricky))
                 .finish();
  auto rendered = render_log_line({{"ts", "2026-11-29T21:04:05.123Z"},
                                   {"level", "info"},
                                   {"event", "op"},
                                   {"op", "acquire"},
                                   {"owner", tricky},
                                   {"plain", "worker-1"},
                                   {"empty", ""},
                                   {"token", uint64_t{18446744073709551615u}},
                                   {"latency_us", int64_t{-3}},
                                   {"flag", true},
                                   {"nothing", nullptr},
                                   {"quoted", tricky}});
  // Both begin with the timestamp (after {"ts":" in JSON), 24 characters that may differ.
  auto ts_at = format == log_format::json ? std::string_view{R"({"ts":")"}.size() : 0;
  REQUIRE(built.size() == rendered.size());
  CHECK(built.substr(0, ts_at) == rendered.substr(0, ts_at));
  CHECK(built.substr(ts_at + 24) == rendered.substr(ts_at + 24));
}

} // namespace

TEST_CASE("the line builder writes what the object renderer writes, in JSON") {
  check_builder_matches(log_format::json);
}

TEST_CASE("the line builder writes what the object renderer writes, as text") {
  check_builder_matches(log_format::text);
}
