#include "net/server_context.hpp"

#include <boost/json/object.hpp>

#include "common/log.hpp"
#include "fencelock/errc.hpp"
#include "net/ws_session.hpp"

namespace fencelock::net {

bool server_context::add_ws(const std::shared_ptr<ws_session>& session) {
  std::lock_guard<std::mutex> guard{ws_mutex_};
  if (ws_stopped_ || ws_sessions_.size() >= cfg_.ws_max_sessions)
    return false;
  ws_sessions_.emplace(session.get(), session);
  svc_.set_websocket_sessions(ws_sessions_.size());
  return true;
}

void server_context::remove_ws(const ws_session* session) {
  std::lock_guard<std::mutex> guard{ws_mutex_};
  ws_sessions_.erase(session);
  svc_.set_websocket_sessions(ws_sessions_.size());
}

std::size_t server_context::ws_sessions() const {
  std::lock_guard<std::mutex> guard{ws_mutex_};
  return ws_sessions_.size();
}

std::vector<std::shared_ptr<ws_session>> server_context::stop_ws() {
  std::lock_guard<std::mutex> guard{ws_mutex_};
  ws_stopped_ = true;
  std::vector<std::shared_ptr<ws_session>> out;
  for (auto& [key, weak] : ws_sessions_)
    if (auto session = weak.lock())
      out.push_back(std::move(session));
  return out;
}

void log_denied(const caf::error& err, std::string_view request_id, std::string_view principal,
                std::string_view peer) {
  if (!log_enabled(log_level::info))
    return;
  errc code = errc::unavailable;
  as_errc(err, code);
  boost::json::object fields{{"request_id", request_id},
                             {"outcome", to_string(code)},
                             {"peer", peer},
                             {"message", error_message(err)}};
  if (!principal.empty())
    fields["principal"] = principal;
  log_event(log_level::info, "access_denied", fields);
}

} // namespace fencelock::net
