#include "common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <type_traits>

#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>
#include <spdlog/spdlog.h>

namespace fencelock {

namespace {

std::atomic<log_format> current_format{log_format::json};

spdlog::logger& logger() {
  // The binary makes its "fencelock" logger the default at start-up (app/serve.cpp); an
  // embedding host's lines go to its own default logger.
  return *spdlog::default_logger_raw();
}

spdlog::level::level_enum spdlog_level(log_level x) {
  switch (x) {
    case log_level::debug:
      return spdlog::level::debug;
    case log_level::info:
      return spdlog::level::info;
    case log_level::warn:
      return spdlog::level::warn;
    case log_level::error:
      return spdlog::level::err;
  }
  return spdlog::level::err;
}

/// Whether a text value can go bare in a logfmt line.
bool bare(std::string_view x) {
  if (x.empty())
    return false;
  for (char c : x)
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c > '~')
      return false;
  return true;
}

/// Renders `line` as `ts level event key=value ...`; strings that need it are JSON-quoted.
std::string render_text(const boost::json::object& line) {
  std::string out;
  auto text_of = [](const boost::json::value& v) {
    if (v.is_string() && bare(v.get_string()))
      return std::string{v.get_string()};
    return boost::json::serialize(v);
  };
  for (auto key : {"ts", "level", "event"}) {
    if (const auto* v = line.if_contains(key)) {
      if (!out.empty())
        out += ' ';
      out += text_of(*v);
    }
  }
  for (const auto& [key, value] : line) {
    if (key == "ts" || key == "level" || key == "event")
      continue;
    out += ' ';
    out += key;
    out += '=';
    out += text_of(value);
  }
  return out;
}

/// Appends `x` (a value, or a string_view as a JSON string) to `out` as JSON, through one
/// serializer per thread, whose buffers are reused.
template <class T>
void append_json(std::string& out, const T& x) {
  thread_local boost::json::serializer sr;
  if constexpr (std::is_same_v<T, boost::json::value>)
    sr.reset(&x);
  else
    sr.reset(boost::json::string_view{x});
  char buf[256];
  while (!sr.done())
    out.append(sr.read(buf, sizeof buf));
}

/// Renders {"ts", "level", "event", ...fields} as JSON straight into the line: what
/// serialize() makes of the object log_line() builds for text, without building it (a line is
/// written per operation). A field named ts, level or event replaces that value in place.
std::string json_line(std::string_view ts, log_level level, std::string_view event,
                      const boost::json::object& fields) {
  std::string out;
  out.reserve(64 + 48 * fields.size());
  auto head = [&](std::string_view key, std::string_view fallback) {
    out += '"';
    out += key;
    out += "\":";
    if (const auto* v = fields.if_contains(key))
      append_json(out, *v);
    else
      append_json(out, fallback);
  };
  out += '{';
  head("ts", ts);
  out += ',';
  head("level", to_string(level));
  out += ',';
  head("event", event);
  for (const auto& [key, value] : fields) {
    if (key == "ts" || key == "level" || key == "event")
      continue;
    out += ',';
    append_json(out, key);
    out += ':';
    append_json(out, value);
  }
  out += '}';
  return out;
}

} // namespace

std::string_view to_string(log_level x) noexcept {
  switch (x) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warn:
      return "warn";
    case log_level::error:
      return "error";
  }
  return "error";
}

void set_log_format(log_format x) noexcept {
  current_format.store(x);
}

std::string iso_timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  auto n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

std::string render_log_line(const boost::json::object& line) {
  return current_format.load() == log_format::text ? render_text(line)
                                                   : boost::json::serialize(line);
}

std::string log_line(log_level level, std::string_view event, const boost::json::object& fields) {
  if (current_format.load() == log_format::json)
    return json_line(iso_timestamp(), level, event, fields);
  boost::json::object line;
  line["ts"] = iso_timestamp();
  line["level"] = to_string(level);
  line["event"] = event;
  for (const auto& [key, value] : fields)
    line[key] = value;
  return render_log_line(line);
}

bool log_enabled(log_level level) {
  return logger().should_log(spdlog_level(level));
}

void log_event(log_level level, std::string_view event, const boost::json::object& fields) {
  auto& log = logger();
  auto spd = spdlog_level(level);
  if (!log.should_log(spd))
    return;
  log.log(spd, "{}", log_line(level, event, fields));
}

} // namespace fencelock
