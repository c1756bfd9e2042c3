// Prints the output of the server and helper processes after a failed test: a failure of the
// suite is most often explained by what the server logged.

#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <iostream>

#include "support/child_process.hpp"

namespace {

struct child_output_listener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    fencelock::test::clear_ended_children_diagnostics();
    TestEventListenerBase::testCaseStarting(info);
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    auto diags = fencelock::test::take_ended_children_diagnostics();
    if (stats.totals.assertions.failed > 0) {
      for (const auto& d : diags)
        std::cerr << "=== child process of failed test '" << stats.testInfo.name
                  << "' ===\n" << d << "\n";
    }
    TestEventListenerBase::testCaseEnded(stats);
  }
};

} // namespace

CATCH_REGISTER_LISTENER(child_output_listener)
