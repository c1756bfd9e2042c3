// A lock holder for the stale-holder test, run as a child process so that the test can freeze it
// with SIGSTOP the way a GC pause or a swapped-out VM would.
//
//   fencelock_test_holder <server-port> <lock> <owner> <ttl-ms> <store-port> <key>
//
// It acquires <lock> (waitMs 0), writes "child:before-pause" to <key> of the fenced store
// (examples/fenced_store: PUT /kv/<key> with Fencing-Lock and Fencing-Token headers), prints
// {"step":"ready"} and blocks reading one line from stdin. Then, believing it still holds the
// lock, it writes "child:after-pause" with the same token and renews the lease. Each step prints
// one JSON line {"step","status","error","token","highest"} to stdout ("highest" is the store's
// answer to a stale write, else 0). Exit codes:
// 0 = all steps ran (whatever the answers), 2 = bad arguments, 3 = the acquire failed,
// 4 = stdin closed before the go line, 5 = a transport error.

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include <boost/json.hpp>

#include "support/http_client.hpp"
#include "support/lock_api.hpp"

namespace {

namespace json = boost::json;
using fencelock::test::http_response;

void report(const char* step, const http_response& res, uint64_t token) {
  json::object line;
  line["step"] = step;
  line["status"] = res.status;
  line["error"] = res.error();
  line["token"] = token;
  line["highest"] = 0;
  if (res.json && res.json->is_object())
    if (auto* h = res.json->as_object().if_contains("highest"); h != nullptr && h->is_number())
      line["highest"] = *h;
  std::cout << json::serialize(line) << std::endl;
}

http_response write_store(fencelock::test::http_client& store, const std::string& key,
                          const std::string& lock, uint64_t token, const std::string& data) {
  return store.request("PUT", "/kv/" + key, data,
                       {{"Fencing-Lock", lock}, {"Fencing-Token", std::to_string(token)}});
}

int run(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: " << argv[0]
              << " <server-port> <lock> <owner> <ttl-ms> <store-port> <key>\n";
    return 2;
  }
  auto server_port = static_cast<uint16_t>(std::stoi(argv[1]));
  std::string lock = argv[2];
  std::string owner = argv[3];
  int64_t ttl_ms = std::stoll(argv[4]);
  auto store_port = static_cast<uint16_t>(std::stoi(argv[5]));
  std::string key = argv[6];

  fencelock::test::lock_client locks{server_port};
  fencelock::test::http_client store{store_port};

  auto acquired = locks.acquire(lock, owner, ttl_ms, 0);
  auto lease = fencelock::test::lease_view::from(acquired);
  report("acquire", acquired, lease ? lease->token : 0);
  if (!lease)
    return 3;
  uint64_t token = lease->token;

  report("write1", write_store(store, key, lock, token, "child:before-pause"), token);
  std::cout << R"({"step":"ready"})" << std::endl;

  std::string go;
  if (!std::getline(std::cin, go))
    return 4;

  // Resumed: this process still believes it holds the lock.
  report("write2", write_store(store, key, lock, token, "child:after-pause"), token);
  report("renew", locks.renew(lock, owner, token, ttl_ms), token);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "stale_holder: " << e.what() << '\n';
    return 5;
  }
}
