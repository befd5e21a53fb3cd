// SPEC §12 model-based test on the memory store: the reference model
// (tck/src/model_check.h) against random operation sequences, compared after
// every step, with reopens of the same MemoryDatabase in the mix. Fixed seeds
// always run, plus one random seed that is printed; MQLITE_MODEL_SEED=<n>
// runs just that seed, MQLITE_MODEL_STEPS=<n> sets the length.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <iostream>
#include <random>
#include <string>

#include "model_check.h"
#include "mqlite/engine.h"
#include "mqlite/memory.h"

namespace mqlite {
namespace {

std::string RunOnFreshDatabase(uint64_t seed, int steps) {
  std::shared_ptr<MemoryDatabase> db = NewMemoryDatabase();
  tck::EngineFactory factory = [db](Clock* clock) -> Result<std::unique_ptr<Engine>> {
    auto store = OpenMemoryStore(db);
    if (!store) return store.error();
    EngineOptions eo;
    eo.clock = clock;
    eo.background_maintenance = false;
    return Engine::Open(std::move(*store), eo);
  };
  tck::ModelCheckOptions o;
  o.seed = seed;
  o.steps = steps;
  o.exclusive = true;
  return tck::RunModelCheck(factory, o);
}

int Steps() {
  const char* s = getenv("MQLITE_MODEL_STEPS");
  return s ? atoi(s) : 500;
}

// SPEC §3–§7 as a whole: fixed seeds, so a failure reproduces.
TEST(MemoryModel, FixedSeedsMatchTheReferenceModel) {
  if (const char* pinned = getenv("MQLITE_MODEL_SEED")) {
    std::string f = RunOnFreshDatabase(std::stoull(pinned), Steps());
    EXPECT_TRUE(f.empty()) << f;
    return;
  }
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::string f = RunOnFreshDatabase(seed, Steps());
    ASSERT_TRUE(f.empty()) << f;
  }
}

// One fresh random seed per run, printed so it can be pinned.
TEST(MemoryModel, RandomSeedMatchesTheReferenceModel) {
  uint64_t seed = std::random_device{}();
  if (const char* pinned = getenv("MQLITE_MODEL_SEED")) seed = std::stoull(pinned);
  std::cout << "model seed " << seed << " (rerun with MQLITE_MODEL_SEED=" << seed << ")\n";
  RecordProperty("model_seed", std::to_string(seed));
  std::string f = RunOnFreshDatabase(seed, Steps());
  EXPECT_TRUE(f.empty()) << f;
}

}  // namespace
}  // namespace mqlite
