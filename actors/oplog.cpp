#include "actors/oplog.hpp"

#include "fencelock/owner.hpp"

#include <boost/json/object.hpp>

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
  boost::json::object fields;
  fields["op"] = ev.op;
  fields["request_id"] = ev.request_id;
  if (!ev.lock.empty())
    fields["lock"] = ev.lock;
  if (!ev.owner.empty())
    fields["owner"] = owner_label(ev.owner);
  if (auto who = !ev.principal.empty() ? ev.principal : owner_principal(ev.owner); !who.empty())
    fields["principal"] = who;
  if (ev.token != 0)
    fields["token"] = ev.token;
  fields["outcome"] = outcome_of(err);
  fields["latency_us"] = latency.count();
  log_event(log_level::info, "op", fields);
}

} // namespace fencelock
