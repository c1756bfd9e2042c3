#include "actors/oplog.hpp"

#include "fencelock/owner.hpp"

#include "common/log.hpp"
#include "fencelock/errc.hpp"

namespace fencelock {

std::string_view outcome_of(const caf::error& err) {
  errc code;
  if (!err)
    return "ok";
  if (as_errc(err, code))
    return to_string(code);
  return "unavailable";
}

void log_operation(const op_event& ev, const caf::error& err) {
  if (!log_enabled(log_level::info))
    return;
  auto latency = std::chrono::duration_cast<std::chrono::microseconds>(
    std::chrono::steady_clock::now() - ev.started);
  // Written field by field: one line per operation, so no object is built for it.
  log_line_builder line{log_level::info, "op"};
  line.add("op", ev.op).add("request_id", ev.request_id);
  if (!ev.lock.empty())
    line.add("lock", ev.lock);
  if (!ev.owner.empty())
    line.add("owner", owner_label(ev.owner));
  if (auto who = !ev.principal.empty() ? ev.principal : owner_principal(ev.owner); !who.empty())
    line.add("principal", who);
  if (ev.token != 0)
    line.add("token", ev.token);
  line.add("outcome", outcome_of(err)).add("latency_us", latency.count());
  log_rendered(log_level::info, line.finish());
}

} // namespace fencelock
