#include "support/store_under_test.hpp"

#include <stdexcept>

namespace fencelock::test {

store_under_test::store_under_test(std::string kind) : kind_(std::move(kind)) {
  if (kind_ == "redis")
    redis_ = std::make_unique<redis_server>(require_redis_server());
  else if (kind_ != "embedded")
    throw std::invalid_argument("unknown store " + kind_);
}

std::vector<std::string> store_under_test::server_args(std::vector<std::string> extra) const {
  std::vector<std::string> args;
  if (redis_)
    args = {"--store", redis_->url()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

} // namespace fencelock::test
