// baseline_caf: the yardstick of the in-process lock path. Request/response between two trivial
// event-based actors in an actor system set up as `fencelock serve` sets up its own
// (fencelock/actor_settings.hpp): a requester keeps `in-flight` requests open to a responder
// that adds one to an integer, and sends the next as each answer arrives. What an in-process
// acquire+release cycle costs is measured against one such round trip.
//
//   baseline_caf [--in-flight 1,16] [--warmup 0.5] [--duration 2] [--rounds 1] [--label TEXT]
//
// Prints one JSON line per trial: {"scenario":"caf_baseline","in_flight","round","per_s",...}.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <boost/json.hpp>

#include "bench/trial_args.hpp"
#include "fencelock/actor_settings.hpp"

namespace {

using fencelock::bench::parse_trial_args;
using fencelock::bench::trial_args;

struct counters {
  std::atomic<uint64_t> answered{0};
  std::atomic<bool> stop{false};
  std::atomic<int> live{0};
};

caf::behavior responder(caf::event_based_actor*) {
  return {[](int32_t x) { return x + 1; }};
}

void ask(caf::event_based_actor* self, const caf::actor& peer, std::shared_ptr<counters> c,
         std::shared_ptr<int> open) {
  ++*open;
  self->request(peer, caf::infinite, int32_t{1}).then([=](int32_t) {
    --*open;
    c->answered.fetch_add(1, std::memory_order_relaxed);
    if (!c->stop.load(std::memory_order_relaxed))
      ask(self, peer, c, open);
    else if (*open == 0) {
      --c->live;
      self->quit();
    }
  });
}

void requester(caf::event_based_actor* self, caf::actor peer, int in_flight,
               std::shared_ptr<counters> c) {
  auto open = std::make_shared<int>(0);
  for (int i = 0; i < in_flight; ++i)
    ask(self, peer, c, open);
}

std::vector<int> parse_list(const char* text) {
  std::vector<int> out;
  std::istringstream is{text};
  for (std::string part; std::getline(is, part, ',');)
    out.push_back(std::stoi(part));
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> in_flights{1, 16};
  trial_args args;
  auto own = [&](std::string_view name, const char* value) {
    if (name != "--in-flight")
      return false;
    in_flights = parse_list(value);
    return true;
  };
  if (!parse_trial_args("baseline_caf", argc, argv, args, own))
    return 2;
  caf::actor_system_config cfg;
  fencelock::apply_actor_settings(cfg); // as `fencelock serve` runs CAF
  caf::actor_system sys{cfg};
  for (int r = 0; r < args.rounds; ++r) {
    for (int k : in_flights) {
      auto c = std::make_shared<counters>();
      auto peer = sys.spawn(responder);
      c->live = 1;
      sys.spawn(requester, peer, k, c);
      std::this_thread::sleep_for(std::chrono::duration<double>(args.warmup));
      auto n0 = c->answered.load();
      auto t0 = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(args.duration));
      auto n1 = c->answered.load();
      auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      c->stop = true;
      while (c->live.load() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
      caf::anon_send_exit(peer, caf::exit_reason::user_shutdown);
      boost::json::object line{{"scenario", "caf_baseline"},
                               {"target", "caf"},
                               {"in_flight", k},
                               {"round", r},
                               {"seconds", secs},
                               {"requests", n1 - n0},
                               {"per_s", static_cast<double>(n1 - n0) / secs}};
      if (!args.label.empty())
        line["label"] = args.label;
      std::printf("%s\n", boost::json::serialize(line).c_str());
      std::fflush(stdout);
    }
  }
  sys.await_all_actors_done();
  return 0;
}
