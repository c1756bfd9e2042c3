#include "client/cli/output.hpp"

#include <cstdio>
#include <iostream>

#include <boost/json.hpp>

namespace fencelock::cli {

namespace json = boost::json;

namespace {

json::object status_object(const lock_info& info) {
  json::object o;
  o["name"] = info.name;
  o["held"] = info.held;
  if (info.held) {
    o["owner"] = info.owner;
    o["token"] = info.token;
    o["expiresAt"] = info.expires_at_ms;
  }
  o["waiters"] = info.waiters;
  o["lastToken"] = info.last_token;
  return o;
}

} // namespace

std::string lease_json(const held_lease& lease) {
  json::object o;
  o["name"] = lease.name();
  o["owner"] = lease.owner();
  o["token"] = lease.token();
  o["ttlMs"] = lease.ttl().count();
  o["expiresAt"] = lease.expires_at_ms();
  return json::serialize(o);
}

std::string status_json(const lock_info& info) {
  return json::serialize(status_object(info));
}

std::string snapshot_json(const std::vector<lock_info>& locks) {
  json::array arr;
  for (const auto& l : locks)
    arr.push_back(status_object(l));
  return json::serialize(json::object{{"type", "snapshot"}, {"locks", std::move(arr)}});
}

std::string event_json(const watch_event& e) {
  json::object o;
  o["type"] = "lock_event";
  o["event"] = e.event;
  o["lock"] = e.lock;
  o["owner"] = e.owner;
  o["token"] = e.token;
  if (e.expires_at_ms)
    o["expiresAt"] = *e.expires_at_ms;
  o["revision"] = e.revision;
  o["at"] = e.at_ms;
  if (!e.cause.empty())
    o["cause"] = e.cause;
  return json::serialize(o);
}

void print_line(const std::string& line) {
  std::cout << line << '\n';
  std::cout.flush();
}

void complain(std::string_view command, std::string_view message) {
  std::cerr << "fencelock " << command << ": " << message << '\n';
}

void complain(std::string_view command, const client_error& e) {
  std::string msg = e.code() + ": " + e.what();
  if (e.holder())
    msg += " (held by " + e.holder()->owner + ")";
  complain(command, msg);
}

} // namespace fencelock::cli
