// Uses the installed client and fence guard as an outside program would: the guard admits a
// rising token and refuses a stale one; the client reports a server nobody runs as
// connection_failed. Exits 0 when both behave.

#include <chrono>
#include <iostream>

#include <fencelock/client.hpp>
#include <fencelock/fence_guard.hpp>

int main() {
  fencelock::fence_guard guard;
  auto first = guard.guarded("jobs:a", 5, [] { return true; });
  auto stale = guard.guarded("jobs:a", 4, [] { return true; });
  if (!first.admitted || stale.admitted || stale.highest != 5) {
    std::cerr << "fence guard: unexpected decisions\n";
    return 1;
  }
  fencelock::client_options opts;
  opts.url = "http://127.0.0.1:1"; // nothing listens on port 1
  opts.connect_timeout = std::chrono::seconds{2};
  try {
    fencelock::client c{opts};
    c.status("jobs:a");
    std::cerr << "client: a status from no server\n";
    return 1;
  } catch (const fencelock::client_error& e) {
    if (e.code() != "connection_failed") {
      std::cerr << "client: " << e.code() << ": " << e.what() << '\n';
      return 1;
    }
  }
  std::cout << "consumer ok\n";
  return 0;
}
