// SPEC §12 model-based test on the SQLite store: the reference model
// (tck/src/model_check.h) against random operation sequences, compared after
// every step. Fixed seeds always run, plus one random seed that is printed;
// MQLITE_MODEL_SEED=<n> runs just that seed, MQLITE_MODEL_STEPS=<n> sets the
// length.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <random>
#include <string>

#include "model_check.h"
#include "mqlite/engine.h"
#include "mqlite/sqlite.h"

namespace mqlite {
namespace {

std::string RunOnFreshFile(uint64_t seed, int steps) {
  char tmpl[] = "/tmp/mqlite-model-XXXXXX";
  if (!mkdtemp(tmpl)) return "mkdtemp failed";
  std::string path = std::string(tmpl) + "/model.db";
  tck::EngineFactory factory = [&](Clock* clock) -> Result<std::unique_ptr<Engine>> {
    auto store = OpenSqliteStore({.path = path});
    if (!store) return store.error();
    EngineOptions eo;
    eo.clock = clock;
    eo.background_maintenance = false;
    return Engine::Open(std::move(*store), eo);
  };
  tck::ModelCheckOptions o;
  o.seed = seed;
  o.steps = steps;
  std::string failure = tck::RunModelCheck(factory, o);
  if (failure.empty()) {
    std::filesystem::remove_all(tmpl);
  } else {
    failure += "\n  database kept for inspection: " + path;
  }
  return failure;
}

int Steps() {
  const char* s = getenv("MQLITE_MODEL_STEPS");
  return s ? atoi(s) : 500;
}

// SPEC §3–§7 as a whole: fixed seeds, so a failure reproduces.
TEST(SqliteModel, FixedSeedsMatchTheReferenceModel) {
  if (const char* pinned = getenv("MQLITE_MODEL_SEED")) {
    uint64_t seed = std::stoull(pinned);
    std::string f = RunOnFreshFile(seed, Steps());
    EXPECT_TRUE(f.empty()) << f;
    return;
  }
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::string f = RunOnFreshFile(seed, Steps());
    ASSERT_TRUE(f.empty()) << f;
  }
}

// One fresh random seed per run, printed so it can be pinned.
TEST(SqliteModel, RandomSeedMatchesTheReferenceModel) {
  uint64_t seed = std::random_device{}();
  if (const char* pinned = getenv("MQLITE_MODEL_SEED")) seed = std::stoull(pinned);
  std::cout << "model seed " << seed << " (rerun with MQLITE_MODEL_SEED=" << seed << ")\n";
  RecordProperty("model_seed", std::to_string(seed));
  std::string f = RunOnFreshFile(seed, Steps());
  EXPECT_TRUE(f.empty()) << f;
}

}  // namespace
}  // namespace mqlite
