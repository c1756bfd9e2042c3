#include "actors/store_reports.hpp"

#include "actors/metrics.hpp"

namespace fencelock {

namespace {

class metrics_reporter : public store_reporter {
public:
  explicit metrics_reporter(std::shared_ptr<metrics> stats) : stats_(std::move(stats)) {
  }

  void write_took(std::chrono::steady_clock::duration elapsed) override {
    stats_->record_store_write(elapsed);
  }

  void commit_done(std::chrono::steady_clock::duration took, std::size_t writes) override {
    stats_->record_commit(took, writes);
  }

  void locks_held(int64_t n) override {
    stats_->set_locks_held(n);
  }

  void expiry_deferred() override {
    stats_->expiry_deferred();
  }

  void note(log_level level, std::string_view event, const boost::json::object& fields) override {
    log_event(level, event, fields);
  }

private:
  std::shared_ptr<metrics> stats_;
};

} // namespace

std::shared_ptr<store_reporter> make_store_reporter(std::shared_ptr<metrics> stats) {
  return std::make_shared<metrics_reporter>(std::move(stats));
}

} // namespace fencelock
