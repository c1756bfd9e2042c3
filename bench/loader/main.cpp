// fencelock_loader: the load generator of the benchmark suite (docs/benchmarks.md). It drives
// fencelock, and the baselines it is measured against, over HTTP keep-alive and pipelined
// WebSockets from a few threads with many connections each, and prints one JSON line per trial.
// bench/run.sh runs every mode; each can be run alone, against servers it starts or at --url.
//
//   fencelock_loader <mode> [--name value]...
//
// Modes (run with --help for the options):
//   uncontended  acquire+release of distinct names: throughput and request latency
//   hot          one lock, FIFO hand-off between WebSocket clients: grants/s, hand-off latency,
//                Jain's index, longest wait
//   takeover     a holder (a child process) acquires and is killed -9: expiry -> next grant
//   scale        hold 1k / 100k / 1M leases: RSS per lease and uncontended throughput at each
//   inproc       the embedding API (fencelock::service) in this process
//   redis        two fencelock instances on one redis-server, and redis-benchmark EVALSHA of the
//                acquire script on that redis-server

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include "bench/loader/scenarios.hpp"

namespace {

constexpr const char* usage = R"(usage: fencelock_loader <mode> [--name value]...

modes: uncontended | hot | takeover | scale | inproc | redis

common:
  --url http://host:port     drive a server the loader did not start (repeat or comma-separate
                             for several instances; modes that need a local process ignore it)
  --targets a,b              servers to start and alternate, each round: fencelock,
                             baseline-http, etcd (default fencelock)
  --server-arg=ARG           add ARG to `fencelock serve` (repeatable), e.g. --server-arg=--store
  --warmup S --duration S    warm-up and measured window of each trial (0.5, 2)
  --rounds N                 alternating rounds (1)
  --threads N                loader I/O threads (1), each running many connections
  --label TEXT               added to every JSON line
  --server-pid PID           with --url: the server's process on this machine, whose CPU,
                             context switches and memory are then reported too
uncontended, redis:
  --workloads http:64x1,ws:1x64   transport:connections x cycles in flight per connection
hot:       --clients 16 --ttl-ms 10000 --wait-ms 60000
takeover:  --samples 20 --ttl-ms 200
scale:     --leases 1000,100000,1000000 --probe http:64x1 --fill-connections 4
           --fill-pipeline 96
inproc:    --clients 1,16,64,256 --store memory|embedded
)";

} // namespace

int main(int argc, char** argv) {
  using namespace fencelock::bench;
  std::signal(SIGPIPE, SIG_IGN); // a write to a server that went away fails, not kills
  if (argc < 2 || std::string{argv[1]} == "--help" || std::string{argv[1]} == "-h") {
    std::fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string mode = argv[1];
  try {
    options o{argc, argv, 2};
    if (o.has("help")) {
      std::fputs(usage, stdout);
      return 0;
    }
    set_label(o.text("label"));
    if (mode == "uncontended")
      return run_uncontended(o);
    if (mode == "hot")
      return run_hot(o);
    if (mode == "takeover")
      return run_takeover(o);
    if (mode == "scale")
      return run_scale(o);
    if (mode == "inproc")
      return run_inproc(o);
    if (mode == "redis")
      return run_redis(o);
    if (mode == "holder")
      return run_holder(o);
    std::fprintf(stderr, "fencelock_loader: unknown mode %s\n%s", mode.c_str(), usage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fencelock_loader %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
