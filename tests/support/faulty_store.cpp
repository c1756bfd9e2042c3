#include "support/faulty_store.hpp"

#include <stdexcept>
#include <string>

#include "fencelock/errc.hpp"

namespace fencelock {

void faulty_store::fail(call which, uint64_t n, bool and_after, failure how) {
  std::lock_guard guard{mtx_};
  auto& p = plans_[static_cast<size_t>(which)];
  p.fail_at = p.made + (n == 0 ? 1 : n);
  p.and_after = and_after;
  p.how = how;
}

void faulty_store::heal() {
  std::lock_guard guard{mtx_};
  for (auto& p : plans_)
    p.fail_at = 0;
}

uint64_t faulty_store::calls(call which) const {
  std::lock_guard guard{mtx_};
  return plans_[static_cast<size_t>(which)].made;
}

caf::error faulty_store::take(call which) {
  std::lock_guard guard{mtx_};
  auto& p = plans_[static_cast<size_t>(which)];
  auto number = ++p.made;
  bool fails = p.fail_at != 0 && (number == p.fail_at || (p.and_after && number > p.fail_at));
  if (!fails)
    return caf::none;
  auto what = "injected failure of call " + std::to_string(number);
  if (p.how == failure::exception)
    throw std::runtime_error{what};
  return caf::make_error(errc::store_unavailable, what);
}

caf::expected<std::vector<stored_lock>> faulty_store::load_all() {
  if (auto err = take(call::load))
    return err;
  return inner_->load_all();
}

caf::error faulty_store::commit(const store_batch& batch) {
  if (before_commit)
    before_commit();
  if (auto err = take(call::commit))
    return err;
  return inner_->commit(batch);
}

caf::expected<uint64_t> faulty_store::fence_floor() {
  return inner_->fence_floor();
}

} // namespace fencelock
