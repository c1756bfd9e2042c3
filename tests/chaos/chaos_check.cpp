// The fault suite's checker on its own: reads the history directory of a run (one the driver
// kept after a failure, or one made with --keep) and prints the same report.
//
//   fencelock_chaos_check <history-dir>
//
// Exit: 0 no violation, 1 violations, 2 bad arguments or an unreadable directory.

#include <iostream>

#include "chaos/checker.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fencelock_chaos_check <history-dir>\n";
    return 2;
  }
  try {
    auto result = fencelock::chaos::check_history(argv[1]);
    std::cout << result.report;
    return result.violations == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "chaos_check: " << e.what() << '\n';
    return 2;
  }
}
