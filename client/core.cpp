// client_core's life cycle (options, I/O thread, shutdown), its blocking calls, and the
// dispatch of what the connection reports (pushes, open, drop). Leases: core_leases.cpp;
// watches: core_watches.cpp.

#include "client/core.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <random>

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>

#include "client/core_helpers.hpp"

namespace fencelock::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

// The I/O thread and its io_context. The thread holds a reference too: should the core ever be
// destroyed on that thread (a misuse, see client.hpp), the context outlives the running handler.
struct client_core::runtime {
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
};

namespace {

bool printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

} // namespace

std::string default_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0)
    host[0] = '\0';
  std::string h;
  for (char c : std::string_view{host})
    if (c > 0x20 && c < 0x7f && h.size() < 64)
      h += c;
  if (h.empty())
    h = "host";
  std::random_device rd;
  uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  char hex[13];
  std::snprintf(hex, sizeof(hex), "%012llx",
                static_cast<unsigned long long>(r & 0xffff'ffff'ffffULL));
  return h + ":" + std::to_string(::getpid()) + ":" + hex;
}

std::vector<endpoint> check_options(client_options& opts) {
  std::string why;
  auto eps = parse_endpoints(opts.url, why);
  if (!eps)
    throw client_error("invalid_request", "url \"" + opts.url + "\": " + why);
  if (opts.owner.empty())
    opts.owner = default_owner();
  if (opts.owner.size() > 128 || !printable_ascii(opts.owner))
    throw client_error("invalid_request", "owner: must be 1..128 printable ASCII characters");
  if (!(opts.renew_fraction > 0.0 && opts.renew_fraction < 1.0))
    throw client_error("invalid_request", "renew_fraction: must be between 0 and 1");
  if (opts.connect_timeout <= 0ms || opts.request_timeout <= 0ms)
    throw client_error("invalid_request", "timeouts must be positive");
  return std::move(*eps);
}

namespace {

/// Returns the TLS settings for the endpoints that speak TLS (null when none does): peers are
/// verified against `opts.tls_ca_file` or the system's CAs, TLS 1.2 at least.
std::shared_ptr<asio::ssl::context> make_tls(const client_options& opts,
                                             const std::vector<endpoint>& endpoints) {
  bool any = std::any_of(endpoints.begin(), endpoints.end(), [](const auto& e) { return e.tls; });
  if (!any)
    return nullptr;
  auto tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2
                   | asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1
                   | asio::ssl::context::no_tlsv1_1);
  tls->set_verify_mode(asio::ssl::verify_peer);
  boost::system::error_code ec;
  if (opts.tls_ca_file.empty())
    tls->set_default_verify_paths(ec);
  else
    tls->load_verify_file(opts.tls_ca_file, ec);
  if (ec)
    throw client_error("invalid_request", "tls_ca_file \"" + opts.tls_ca_file
                                            + "\": cannot load CA certificates: " + ec.message());
  if (opts.tls_cert_file.empty() != opts.tls_key_file.empty())
    throw client_error("invalid_request",
                       "tls_cert_file and tls_key_file: give both (a client certificate) or neither");
  if (!opts.tls_cert_file.empty()) {
    tls->use_certificate_chain_file(opts.tls_cert_file, ec);
    if (ec)
      throw client_error("invalid_request", "tls_cert_file \"" + opts.tls_cert_file
                                              + "\": " + ec.message());
    tls->use_private_key_file(opts.tls_key_file, asio::ssl::context::pem, ec);
    if (ec)
      throw client_error("invalid_request", "tls_key_file \"" + opts.tls_key_file
                                              + "\": " + ec.message());
  }
  return tls;
}

} // namespace

client_core::client_core(client_options opts)
  : opts_(std::move(opts)),
    endpoints_(check_options(opts_)),
    rt_(std::make_shared<runtime>()),
    strand_(asio::make_strand(rt_->io)) {
  connection::hooks hooks;
  hooks.push = [this](const json::object& frame) { on_push(frame); };
  hooks.opened = [this] { on_opened(); };
  hooks.dropped = [this] { on_dropped(); };
  hooks.wanted = [this] { return wanted(); };
  // The server pings after half its idle timeout; hearing nothing for a request timeout (at
  // least 2 s) means the server or the path is gone.
  auto idle = std::max<milliseconds>(opts_.request_timeout, 2s);
  conn_ = std::make_unique<connection>(strand_, endpoints_, opts_.connect_timeout, idle,
                                       opts_.bearer_token, make_tls(opts_, endpoints_),
                                       std::move(hooks));
  rt_->thread = std::thread{[rt = rt_] { rt->io.run(); }};
}

client_core::~client_core() {
  if (on_io_thread()) {
    // Misuse (the last handle died in a callback): we cannot join ourselves. Stop the loop;
    // the thread lets go of the runtime when the current handler returns.
    rt_->io.stop();
    rt_->thread.detach();
    return;
  }
  std::promise<void> closed;
  auto f = closed.get_future();
  asio::post(strand_, [this, &closed] {
    auto leases = renewing_;
    for (auto& l : leases)
      stop_renewing(l);
    for (auto& w : watches_)
      w->active = false;
    watches_.clear();
    conn_->shutdown([&closed] { closed.set_value(); });
  });
  f.wait_for(3s); // the shutdown bounds itself to ~1 s
  rt_->work.reset();
  rt_->io.stop();
  rt_->thread.join();
}

bool client_core::on_io_thread() const noexcept {
  return rt_->thread.get_id() == std::this_thread::get_id();
}

void client_core::require_user_thread(const char* what) const {
  if (on_io_thread())
    throw client_error("invalid_call", std::string{what}
                                         + " blocks, and was called on the client's I/O "
                                           "thread (from a callback)");
}

milliseconds client_core::guard(milliseconds budget) const {
  return budget + opts_.connect_timeout + 10s;
}

answer client_core::call(json::object fields, milliseconds timeout) {
  auto done = std::make_shared<std::promise<answer>>();
  auto f = done->get_future();
  asio::post(strand_, [this, fields = std::move(fields), timeout, done]() mutable {
    conn_->request(std::move(fields), timeout, [done](answer a) { done->set_value(std::move(a)); });
  });
  return wait_for(f, guard(timeout));
}

void client_core::release_token(std::string_view name, uint64_t token) {
  require_user_thread("release");
  auto a = call(release_fields(name, opts_.owner, token), opts_.request_timeout);
  if (!a.ok())
    throw *a.error;
}

void client_core::force_release(std::string_view name, uint64_t token) {
  require_user_thread("force_release");
  boost::json::object fields{{"op", "release"}, {"lock", name}, {"force", true}};
  if (token != 0)
    fields["token"] = token;
  auto a = call(std::move(fields), opts_.request_timeout);
  if (!a.ok())
    throw *a.error;
}

lock_info client_core::status(std::string_view name) {
  require_user_thread("status");
  auto a = call({{"op", "status"}, {"lock", name}}, opts_.request_timeout);
  if (!a.ok())
    throw *a.error;
  auto info = decode_status(*a.result);
  if (!info)
    throw client_error("protocol_error", "unreadable status answer");
  return *info;
}

lease_info client_core::renew_token(std::string_view name, uint64_t token, milliseconds ttl) {
  require_user_thread("renew");
  if (ttl < 0ms)
    throw client_error("invalid_request", "ttl: must not be negative");
  json::object req{{"op", "renew"}, {"lock", name}, {"owner", opts_.owner}, {"token", token}};
  if (ttl > 0ms)
    req["ttlMs"] = ttl.count(); // absent: the lease keeps its TTL
  auto a = call(std::move(req), opts_.request_timeout);
  if (!a.ok())
    throw *a.error;
  auto l = decode_lease(*a.result);
  if (!l)
    throw client_error("protocol_error", "unreadable renew answer");
  return lease_info{l->name, l->owner, l->token, milliseconds{l->ttl_ms}, l->expires_at_ms};
}

token_check client_core::check(std::string_view name, uint64_t token) {
  require_user_thread("check");
  auto a = call({{"op", "check"}, {"lock", name}, {"token", token}}, opts_.request_timeout);
  if (!a.ok())
    throw *a.error;
  const auto* current = a.result->if_contains("current");
  if (current == nullptr || !current->is_bool())
    throw client_error("protocol_error", "unreadable check answer");
  token_check out;
  out.current = current->get_bool();
  out.token = positive(a.result->if_contains("token"));
  if (const auto* at = a.result->if_contains("expiresAt"); at != nullptr && at->is_int64())
    out.expires_at_ms = at->get_int64();
  return out;
}

void client_core::on_push(const json::object& frame) {
  auto type = frame_type(frame);
  if (type == "lease_lost") {
    auto push = decode_lease_lost(frame);
    if (!push)
      return;
    auto leases = renewing_; // lose() edits renewing_
    for (auto& l : leases)
      if (l->name == push->lock && l->token == push->token)
        lose(l, loss_cause_of_push(push->cause), "the server ended the lease (" + push->cause
                                                    + ")");
    return;
  }
  if (type == "lock_event") {
    auto sid = positive(frame.if_contains("subscription"));
    auto event = decode_event(frame);
    if (sid == 0 || !event)
      return;
    auto watches = watches_; // a handler may cancel a watch
    for (auto& w : watches)
      if (w->active && w->server_id == sid && w->handlers.on_event)
        w->handlers.on_event(*event);
  }
}

void client_core::on_opened() {
  auto watches = watches_;
  for (auto& w : watches) {
    if (!w->active || w->server_id != 0 || w->subscribing)
      continue;
    subscribe_on_server(w, [w](std::optional<client_error> err) {
      if (err && w->active && w->handlers.on_interrupted)
        w->handlers.on_interrupted(*err);
    });
  }
}

void client_core::on_dropped() {
  auto leases = renewing_;
  for (auto& l : leases)
    if (l->scope == lease_scope::session)
      lose(l, loss_cause::session_closed,
           "the connection closed, and a session-bound lease ends with it");
  auto watches = watches_;
  for (auto& w : watches) {
    if (!w->active)
      continue;
    w->server_id = 0;
    if (w->handlers.on_interrupted)
      w->handlers.on_interrupted(
        client_error("connection_failed", "watch interrupted: the connection dropped"));
  }
}

bool client_core::wanted() const {
  return !renewing_.empty() || !watches_.empty();
}

} // namespace fencelock::detail
