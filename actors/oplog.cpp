#include "actors/oplog.hpp"

#include <atomic>
#include <ctime>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "fencelock/errc.hpp"

namespace fencelock {

namespace {

spdlog::logger& logger() {
  // The binary registers "fencelock" (JSON lines on stdout); an embedding host gets its default.
  static auto named = spdlog::get("fencelock");
  return named ? *named : *spdlog::default_logger_raw();
}

std::atomic<log_format> current_format{log_format::json};

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

void set_log_format(log_format x) noexcept {
  current_format.store(x);
}

std::string render_log_line(const boost::json::object& line) {
  return current_format.load() == log_format::text ? render_text(line)
                                                   : boost::json::serialize(line);
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

void log_operation(const op_event& ev, const caf::error& err) {
  auto& log = logger();
  if (!log.should_log(spdlog::level::info))
    return;
  auto latency = std::chrono::duration_cast<std::chrono::microseconds>(
    std::chrono::steady_clock::now() - ev.started);
  boost::json::object line;
  line["ts"] = iso_timestamp();
  line["level"] = "info";
  line["event"] = "op";
  line["op"] = ev.op;
  line["request_id"] = ev.request_id;
  if (!ev.lock.empty())
    line["lock"] = ev.lock;
  if (!ev.owner.empty())
    line["owner"] = ev.owner;
  if (ev.token != 0)
    line["token"] = ev.token;
  errc code;
  if (!err)
    line["outcome"] = "ok";
  else if (as_errc(err, code))
    line["outcome"] = to_string(code);
  else
    line["outcome"] = "unavailable";
  line["latency_us"] = latency.count();
  log.info(render_log_line(line));
}

void log_event(std::string_view level, std::string_view event, const boost::json::object& fields) {
  auto& log = *spdlog::default_logger();
  auto spd_level = level == "error"  ? spdlog::level::err
                   : level == "warn" ? spdlog::level::warn
                                     : spdlog::level::info;
  if (!log.should_log(spd_level))
    return;
  boost::json::object line;
  line["ts"] = iso_timestamp();
  line["level"] = level;
  line["event"] = event;
  for (const auto& [key, value] : fields)
    line[key] = value;
  log.log(spd_level, "{}", render_log_line(line));
}

} // namespace fencelock
