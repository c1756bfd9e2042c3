// Where the embedded store's actor runs (actors/store/factory.cpp): on the scheduler when it
// has two workers or more, so that a commit's answers need no thread hand-off; on a thread of
// its own with a single worker, which a commit would otherwise stop. A real SQLite file.

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <caf/abstract_actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/local_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/clock.hpp"
#include "actors/store/factory.hpp"
#include "fencelock/actor_settings.hpp"
#include "support/temp_dir.hpp"

using namespace fencelock;

namespace {

/// Opens the embedded store over a fresh directory on an actor system of `workers` workers;
/// returns whether its store actor runs on a thread of its own.
bool store_actor_detached(uint32_t workers) {
  test::temp_dir dir;
  caf::actor_system_config cfg;
  apply_actor_settings(cfg, workers);
  caf::actor_system sys{cfg};
  config conf;
  conf.data_dir = dir.str();
  auto store = make_store(sys, conf, clock_mapping::now(), nullptr, nullptr);
  REQUIRE(store);
  bool found = false;
  bool detached = false;
  for (auto& a : (*store)->actors()) {
    auto* actor = dynamic_cast<caf::local_actor*>(caf::actor_cast<caf::abstract_actor*>(a));
    REQUIRE(actor != nullptr);
    if (std::string{actor->name()} == "fencelock.store") {
      found = true;
      detached = actor->getf(caf::abstract_actor::is_detached_flag);
    }
  }
  REQUIRE(found);
  caf::scoped_actor self{sys};
  for (auto& a : (*store)->actors()) {
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {});
  }
  (*store)->close();
  return detached;
}

} // namespace

TEST_CASE("the store's commits run on the scheduler unless it has a single worker",
          "[integration][store]") {
  CHECK_FALSE(store_actor_detached(2));
  CHECK(store_actor_detached(1));
}
