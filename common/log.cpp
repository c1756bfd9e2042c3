#include "common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include "common/json_writer.hpp"

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

namespace {

/// Appends the UTC time now as 2026-01-31T12:00:00.123Z: written into the line being built,
/// with no string of its own (24 characters: one more than a string holds without the heap).
void append_iso_timestamp(std::string& out) {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto ms = static_cast<int>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  // The date and time to the second, formatted once per second and thread: a line is written
  // per operation, and gmtime_r with strftime cost more than the rest of the line.
  thread_local std::time_t cached_secs = -1;
  thread_local char cached[24];
  thread_local std::size_t cached_len = 0;
  if (secs != cached_secs) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    cached_len = std::strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm);
    cached_secs = secs;
  }
  const char fraction[] = {'.', static_cast<char>('0' + ms / 100),
                           static_cast<char>('0' + ms / 10 % 10), static_cast<char>('0' + ms % 10),
                           'Z'};
  out.append(cached, cached_len);
  out.append(fraction, sizeof fraction);
}

} // namespace

std::string iso_timestamp() {
  std::string out;
  append_iso_timestamp(out);
  return out;
}

std::string render_log_line(const boost::json::object& line) {
  return current_format.load() == log_format::text ? render_text(line)
                                                   : boost::json::serialize(line);
}

std::string log_line(log_level level, std::string_view event, const boost::json::object& fields) {
  if (!fields.contains("ts") && !fields.contains("level") && !fields.contains("event")) {
    log_line_builder line{level, event};
    for (const auto& [key, value] : fields)
      line.add_value(key, value);
    return line.finish();
  }
  // A field replaces a head value in place, as it does in an object.
  boost::json::object line;
  line["ts"] = iso_timestamp();
  line["level"] = to_string(level);
  line["event"] = event;
  for (const auto& [key, value] : fields)
    line[key] = value;
  return render_log_line(line);
}

log_line_builder::log_line_builder(log_level level, std::string_view event)
  : json_(current_format.load() == log_format::json) {
  line_.reserve(224);
  if (json_) {
    line_ += R"({"ts":")";
    append_iso_timestamp(line_);
    line_ += R"(","level":")";
    line_ += to_string(level);
    line_ += R"(","event":)";
    append_json_string(line_, event);
  } else {
    append_iso_timestamp(line_);
    line_ += ' ';
    line_ += to_string(level);
    line_ += ' ';
    if (bare(event))
      line_ += event;
    else
      append_json_string(line_, event);
  }
}

void log_line_builder::begin_field(std::string_view key) {
  if (json_) {
    line_ += ',';
    append_json_string(line_, key);
    line_ += ':';
  } else {
    line_ += ' ';
    line_ += key;
    line_ += '=';
  }
}

log_line_builder& log_line_builder::add(std::string_view key, std::string_view value) {
  begin_field(key);
  if (!json_ && bare(value))
    line_ += value;
  else
    append_json_string(line_, value);
  return *this;
}

log_line_builder& log_line_builder::add_value(std::string_view key,
                                              const boost::json::value& value) {
  if (value.is_string())
    return add(key, std::string_view{value.get_string()});
  begin_field(key);
  line_ += boost::json::serialize(value);
  return *this;
}

std::string log_line_builder::finish() {
  if (json_)
    line_ += '}';
  return std::move(line_);
}

void log_rendered(log_level level, std::string line) {
  auto& log = logger();
  auto spd = spdlog_level(level);
  if (log.should_log(spd))
    log.log(spd, spdlog::string_view_t{line}); // as it is: no format string to parse
}

bool log_enabled(log_level level) {
  return logger().should_log(spdlog_level(level));
}

void log_event(log_level level, std::string_view event, const boost::json::object& fields) {
  auto& log = logger();
  auto spd = spdlog_level(level);
  if (!log.should_log(spd))
    return;
  auto line = log_line(level, event, fields);
  log.log(spd, spdlog::string_view_t{line});
}

} // namespace fencelock
