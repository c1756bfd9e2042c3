// The public handles of fencelock/client.hpp: thin wrappers over detail::client_core.

#include "fencelock/client.hpp"

#include <algorithm>
#include <utility>

#include "client/core.hpp"
#include "client/lease_state.hpp"

namespace fencelock {

client_error::client_error(std::string code, const std::string& message,
                           std::optional<lock_holder> holder,
                           std::chrono::milliseconds retry_after)
  : std::runtime_error(message),
    code_(std::move(code)),
    holder_(std::move(holder)),
    retry_after_(retry_after) {
}

const char* to_string(loss_cause x) noexcept {
  switch (x) {
    case loss_cause::refused:
      return "refused";
    case loss_cause::expired:
      return "expired";
    case loss_cause::undelivered:
      return "undelivered";
    case loss_cause::session_closed:
      return "session_closed";
    case loss_cause::deadline:
      return "deadline";
    case loss_cause::store_lost:
      return "store_lost";
    case loss_cause::revoked:
      return "revoked";
  }
  return "unknown";
}

// --- held_lease ------------------------------------------------------------------------------

held_lease::held_lease() noexcept = default;

held_lease::held_lease(std::shared_ptr<detail::client_core> core,
                       std::shared_ptr<detail::lease_state> st)
  : core_(std::move(core)), state_(std::move(st)) {
}

held_lease::held_lease(held_lease&& other) noexcept
  : core_(std::move(other.core_)), state_(std::move(other.state_)) {
}

held_lease& held_lease::operator=(held_lease&& other) noexcept {
  if (this != &other) {
    end_quietly();
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
  }
  return *this;
}

held_lease::~held_lease() {
  end_quietly();
}

void held_lease::end_quietly() noexcept {
  if (!state_)
    return;
  if (state_->holder_standing() == detail::lease_state::standing::holding && !state_->loss()) {
    if (core_->on_io_thread()) {
      core_->release_in_background(state_);
    } else {
      try {
        core_->release(state_);
      } catch (...) {
        // Best effort: the lease ends at its TTL on the server anyway.
      }
    }
  }
  state_.reset();
  core_.reset();
}

const detail::lease_state& held_lease::state() const {
  if (!state_)
    throw client_error("invalid_call", "empty held_lease (moved from)");
  return *state_;
}

const std::string& held_lease::name() const {
  return state().name;
}

const std::string& held_lease::owner() const {
  return state().owner;
}

uint64_t held_lease::token() const {
  return state().token;
}

std::chrono::milliseconds held_lease::ttl() const {
  return state().ttl;
}

lease_scope held_lease::scope() const {
  return state().scope;
}

std::chrono::steady_clock::time_point held_lease::local_deadline() const {
  using clock = std::chrono::steady_clock;
  return clock::time_point{clock::duration{state().deadline_ticks.load()}};
}

int64_t held_lease::expires_at_ms() const {
  return state().expires_at_ms.load();
}

bool held_lease::lost() const {
  return state().loss().has_value();
}

std::optional<lease_loss> held_lease::loss() const {
  return state().loss();
}

void held_lease::on_lost(std::function<void(const lease_loss&)> callback) {
  state();
  if (auto now = state_->set_on_lost(std::move(callback)))
    now();
}

std::shared_future<lease_loss> held_lease::lost_future() const {
  return state().lost_future;
}

void held_lease::release() {
  state();
  core_->release(state_);
}

void held_lease::detach() noexcept {
  if (state_)
    core_->detach(state_);
}

// --- subscription ----------------------------------------------------------------------------

subscription::subscription() noexcept = default;

subscription::subscription(std::shared_ptr<detail::client_core> core,
                           std::shared_ptr<detail::watch_state> w)
  : core_(std::move(core)), state_(std::move(w)) {
}

subscription::subscription(subscription&& other) noexcept
  : core_(std::move(other.core_)), state_(std::move(other.state_)) {
}

subscription& subscription::operator=(subscription&& other) noexcept {
  if (this != &other) {
    cancel();
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
  }
  return *this;
}

subscription::~subscription() {
  cancel();
}

void subscription::cancel() noexcept {
  if (!state_)
    return;
  core_->unwatch(state_);
  state_.reset();
  core_.reset();
}

// --- client ----------------------------------------------------------------------------------

client::client(client_options opts)
  : core_(std::make_shared<detail::client_core>(std::move(opts))) {
}

client::~client() = default;

const std::string& client::owner() const noexcept {
  return core_->options().owner;
}

const client_options& client::options() const noexcept {
  return core_->options();
}

held_lease client::acquire(std::string_view name, std::chrono::milliseconds ttl,
                           std::chrono::milliseconds wait, lease_scope scope) {
  return held_lease{core_, core_->acquire(name, ttl, wait, scope)};
}

void client::release(std::string_view name, uint64_t token) {
  core_->release_token(name, token);
}

void client::force_release(std::string_view name, uint64_t token) {
  core_->force_release(name, token);
}

lease_info client::renew(std::string_view name, uint64_t token, std::chrono::milliseconds ttl) {
  return core_->renew_token(name, token, ttl);
}

token_check client::check(std::string_view name, uint64_t token) {
  return core_->check(name, token);
}

std::vector<lock_info> client::list(std::string_view prefix) {
  // The snapshot of a prefix subscription is the list of held locks; the WebSocket API has no
  // other way to ask. watch() returns once on_snapshot ran (on the I/O thread), and cancel()
  // returns once no handler runs any more, so `out` is read by this thread alone from then on.
  std::vector<lock_info> out;
  watch_handlers h;
  h.on_snapshot = [&out](const std::vector<lock_info>& locks) { out = locks; };
  auto sub = watch(prefix, true, std::move(h));
  sub.cancel();
  std::sort(out.begin(), out.end(),
            [](const lock_info& a, const lock_info& b) { return a.name < b.name; });
  return out;
}

lock_info client::status(std::string_view name) {
  return core_->status(name);
}

subscription client::watch(std::string_view name, bool prefix, watch_handlers handlers) {
  return subscription{core_, core_->watch(name, prefix, std::move(handlers))};
}

} // namespace fencelock
