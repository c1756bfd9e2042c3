#include "net/server_context.hpp"

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

} // namespace fencelock::net
