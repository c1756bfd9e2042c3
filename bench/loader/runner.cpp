#include "bench/loader/runner.hpp"

#include <algorithm>
#include <thread>

#include "support/proc_stats.hpp"

namespace fencelock::bench {

namespace {

struct worker {
  tally counts;                    // destroyed after the connections that count into it
  boost::asio::io_context ioc{1};
};

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

/// Sums `read` (a per-process figure, negative when unreadable) over `pids`; -1 when there are
/// none or one is unreadable.
template <class Read>
auto sum_over(const std::vector<pid_t>& pids, Read read) -> decltype(read(pid_t{})) {
  using value = decltype(read(pid_t{}));
  if (pids.empty())
    return -1;
  value sum = 0;
  for (auto pid : pids) {
    auto x = read(pid);
    if (x < 0)
      return -1;
    sum += x;
  }
  return sum;
}

/// The workers of one trial and their threads.
class crew {
public:
  crew(int threads, int connections, const conn_factory& make, trial_shared& shared)
    : workers_(static_cast<std::size_t>(std::max(threads, 1))) {
    for (auto& w : workers_)
      w = std::make_unique<worker>();
    for (int i = 0; i < connections; ++i) {
      auto& w = *workers_[static_cast<std::size_t>(i) % workers_.size()];
      make(i, w.ioc, shared, w.counts)->start();
    }
    for (auto& w : workers_)
      threads_.emplace_back([&ioc = w->ioc] { ioc.run(); });
  }

  ~crew() {
    stop();
  }

  crew(const crew&) = delete;
  crew& operator=(const crew&) = delete;

  /// Stops the workers (connections still open are dropped) and joins their threads.
  void stop() {
    for (auto& w : workers_)
      w->ioc.stop();
    for (auto& t : threads_)
      if (t.joinable())
        t.join();
  }

  /// Returns the merged counts; call after stop().
  tally merged() const {
    tally all;
    for (const auto& w : workers_)
      all.merge(w->counts);
    return all;
  }

private:
  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<std::thread> threads_;
};

bool wait_until(const std::function<bool()>& done, std::chrono::seconds patience) {
  auto deadline = steady::now() + patience;
  while (!done()) {
    if (steady::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
  }
  return true;
}

} // namespace

trial_result run_trial(int connections, const conn_factory& make, const trial_settings& s) {
  trial_shared shared;
  trial_result out;
  out.connections = connections;
  crew c{s.threads, connections, make, shared};
  bool ready = wait_until([&] { return shared.connected.load() >= connections; }, s.patience);
  sleep_s(s.warmup_s);
  auto server0 = sum_over(s.server_pids, test::process_cpu_seconds);
  auto switches0 = sum_over(s.server_pids, test::process_context_switches);
  auto self0 = test::self_cpu_seconds();
  auto t0 = steady::now();
  shared.now = static_cast<int>(phase::measure);
  if (ready)
    sleep_s(s.duration_s);
  shared.now = static_cast<int>(phase::stop);
  out.seconds = seconds_since(t0);
  auto self1 = test::self_cpu_seconds();
  auto server1 = sum_over(s.server_pids, test::process_cpu_seconds);
  auto switches1 = sum_over(s.server_pids, test::process_context_switches);
  out.loader_cpu = (self1 - self0) / out.seconds;
  if (server0 >= 0 && server1 >= 0)
    out.server_cpu = (server1 - server0) / out.seconds;
  if (switches0 >= 0 && switches1 >= switches0)
    out.server_switches = switches1 - switches0;
  out.stuck = !wait_until([&] { return shared.open.load() == 0; }, s.patience);
  c.stop();
  out.counts = c.merged();
  if (!ready)
    out.counts.error("connections not ready within " + std::to_string(s.patience.count()) + " s");
  if (out.stuck)
    out.counts.error("connections still busy " + std::to_string(s.patience.count())
                     + " s after the window");
  return out;
}

trial_result run_to_completion(int connections, const conn_factory& make, int threads,
                               const std::function<bool()>& progress) {
  trial_shared shared;
  shared.now = static_cast<int>(phase::measure);
  trial_result out;
  out.connections = connections;
  auto self0 = test::self_cpu_seconds();
  auto t0 = steady::now();
  crew c{threads, connections, make, shared};
  auto next_report = t0 + std::chrono::seconds{1};
  while (shared.open.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
    if (steady::now() >= next_report) {
      if (!progress()) {
        out.stuck = true;
        break;
      }
      next_report += std::chrono::seconds{1};
    }
  }
  out.seconds = seconds_since(t0);
  out.loader_cpu = (test::self_cpu_seconds() - self0) / out.seconds;
  c.stop();
  out.counts = c.merged();
  return out;
}

} // namespace fencelock::bench
