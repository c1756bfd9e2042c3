#include "actors/fence_issuer.hpp"

#include <algorithm>
#include <chrono>

#include "actors/caf_workarounds.hpp"
#include "fencelock/errc.hpp"
#include "fencelock/types.hpp"

namespace fencelock {

namespace {

using self_ptr = fence_issuer_actor::stateful_pointer<fence_issuer_state>;

constexpr auto store_timeout = std::chrono::seconds{10};

void reserve(self_ptr self);
void settle(self_ptr self);

// Answers queued requests from the reserved range, oldest first.
void drain(self_ptr self) {
  auto& st = self->state;
  while (!st.queued.empty()) {
    auto token = st.tokens->take_any();
    if (!token)
      break;
    st.queued.front().deliver(*token);
    st.queued.pop_front();
  }
  if (!st.queued.empty() || st.tokens->left() < st.block / 2)
    reserve(self);
}

void reserve(self_ptr self) {
  auto& st = self->state;
  if (st.reserving)
    return;
  auto target = std::min(st.tokens->next_ceiling(st.block), max_token + 1);
  if (target <= st.tokens->next_ceiling(0)) {
    // Nothing left to reserve: 2^53 tokens are spent, and a JSON client could not hold a
    // larger one exactly.
    for (auto& rp : st.queued)
      rp.deliver(caf::make_error(errc::unavailable, std::string{"fencing tokens exhausted"}));
    st.queued.clear();
    return;
  }
  st.reserving = true;
  self->request(st.store, store_timeout, reserve_atom_v, target)
    .then(
      [=](bool) {
        auto& s = self->state;
        s.reserving = false;
        s.tokens->raise(target);
        if (s.settling)
          return settle(self);
        drain(self);
      },
      [=](caf::error& err) {
        // Fail closed: no token without a durable ceiling above it. The next request retries.
        auto& s = self->state;
        s.reserving = false;
        if (s.settling)
          return settle(self);
        for (auto& rp : s.queued)
          rp.deliver(caf::make_error(errc::store_unavailable,
                                     "cannot reserve fencing tokens: " + to_string(err)));
        s.queued.clear();
      });
}

/*
 * The clean stop: answers the queued requests shutting_down, waits for a reservation in flight,
 * then writes the ceiling back down to `next` and quits. Every token handed out lies below
 * `next`, and none goes out after this, so the lowered ceiling still covers them all. Should the
 * write fail, the higher ceiling stays on record: a restart then skips the rest of the block,
 * which is safe.
 */
void settle(self_ptr self) {
  auto& st = self->state;
  st.settling = true;
  for (auto& rp : st.queued)
    rp.deliver(caf::make_error(errc::shutting_down, std::string{"the service is stopping"}));
  st.queued.clear();
  auto next = st.tokens->close(); // no lock actor takes a token any more
  if (st.reserving)
    return; // the reservation's answer calls settle() again
  if (st.tokens->left() == 0)
    return self->quit(st.stop_reason); // nothing reserved beyond the next token
  auto done = [=] { self->quit(self->state.stop_reason); };
  self->request(st.store, store_timeout, settle_atom_v, next)
    .then([=](bool) { done(); }, [=](caf::error&) { done(); });
}

} // namespace

token_window::token_window(uint64_t floor, uint64_t block)
  : next_(std::max<uint64_t>(floor, 1)), ceiling_(next_), half_block_(block / 2) {
}

std::optional<uint64_t> token_window::take() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!open_ || ceiling_ - next_ <= half_block_)
    return std::nullopt;
  return next_++;
}

std::optional<uint64_t> token_window::take_any() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!open_ || next_ >= ceiling_)
    return std::nullopt;
  return next_++;
}

uint64_t token_window::left() {
  std::lock_guard<std::mutex> guard{mtx_};
  return ceiling_ > next_ ? ceiling_ - next_ : 0;
}

uint64_t token_window::next_ceiling(uint64_t block) {
  std::lock_guard<std::mutex> guard{mtx_};
  return std::max(next_, ceiling_) + block;
}

void token_window::raise(uint64_t ceiling) {
  std::lock_guard<std::mutex> guard{mtx_};
  ceiling_ = std::max(ceiling_, ceiling);
}

uint64_t token_window::close() {
  std::lock_guard<std::mutex> guard{mtx_};
  open_ = false;
  return next_;
}

fence_issuer_state::~fence_issuer_state() {
  // However the issuer ends, the lock actors take no token from it any more.
  if (tokens)
    tokens->close();
  // A crash (not a clean stop, which answers them) leaves requests queued for a reservation.
  break_promises(queued,
                 caf::make_error(errc::unavailable, std::string{"the fence issuer stopped"}));
}

fence_issuer_actor::behavior_type fence_issuer_impl(self_ptr self, store_actor store,
                                                    std::shared_ptr<token_window> tokens,
                                                    uint64_t block) {
  auto& st = self->state;
  st.store = std::move(store);
  st.tokens = std::move(tokens);
  st.block = std::max<uint64_t>(block, 1);
  reserve(self);
  self->set_exit_handler([=](caf::exit_msg& msg) {
    auto& s = self->state;
    s.stop_reason = std::move(msg.reason);
    if (s.stop_reason != caf::exit_reason::user_shutdown)
      return self->quit(s.stop_reason); // not a clean stop: leave the ceiling as it is
    if (!s.settling)
      settle(self);
  });
  return {
    [=](next_token_atom) -> caf::result<uint64_t> {
      auto& s = self->state;
      if (s.settling)
        return caf::make_error(errc::shutting_down, std::string{"the service is stopping"});
      if (s.queued.empty()) {
        if (auto token = s.tokens->take_any()) {
          if (s.tokens->left() < s.block / 2)
            reserve(self);
          return *token;
        }
      }
      s.queued.push_back(self->make_response_promise<uint64_t>());
      reserve(self);
      return s.queued.back();
    },
  };
}

} // namespace fencelock
