// mqlite::tck — the conformance kit (SPEC §12).
//
// A store porter links mqlite::tck and writes one small file:
//
//   #include "mqlite/tck.h"
//   mqlite::tck::StoreProfile MyProfile() {
//     mqlite::tck::StoreProfile p;
//     p.name = "mystore";
//     p.exclusive = true;                          // one engine per data set
//     p.crash = mqlite::tck::CrashModel::kProcess; // data survives SIGKILL
//     p.make_fixture = [] { return std::make_unique<MyFixture>(); };
//     return p;
//   }
//   MQLITE_TCK_INSTANTIATE(MyStore, MyProfile);
//
// and runs the resulting GoogleTest binary. Every suite of the kit is
// instantiated for the profile; the tests use the public engine API only (and,
// for SPEC §8, the native handle through the profile's business hooks).
//
// Capabilities may turn a test into GTEST_SKIP() with a reason — an embedded
// store has no multi-engine tests, a store whose data dies with the process
// has no crash tests, a store with no native handle has no business-write
// tests. A capability never weakens an assertion.
#ifndef MQLITE_TCK_H_
#define MQLITE_TCK_H_

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/clock.h"
#include "mqlite/engine.h"
#include "mqlite/store.h"

namespace mqlite::tck {

// What "crash" means for the store (SPEC §12).
enum class CrashModel {
  // Committed data survives the death of the process that wrote it (SIGKILL):
  // the kit's crash-injection tests run, in a forked child.
  kProcess,
  // Data lives only as long as the process (an in-memory store): crash tests
  // are skipped.
  kNone,
};

// One data set of the store under test: a temp directory, an in-memory
// database, a PostgreSQL schema... Created fresh for every test and destroyed
// after it (release everything there).
class StoreFixture {
 public:
  virtual ~StoreFixture() = default;
  // Opens a Store on this data set. Called again after the previous Store was
  // destroyed (a reopen) and must then see everything committed before. For
  // an exclusive store, a second Open while another Store is open must fail
  // with DbLocked. May be called in a forked child process (crash tests).
  virtual Result<std::unique_ptr<Store>> Open() = 0;
  // G7: bytes the data set occupies on disk now, with no Store open; nullopt
  // if the notion does not apply (the space test then skips).
  virtual std::optional<int64_t> StorageBytes() { return std::nullopt; }
};

// The §8 business hooks: write and read one application record through the
// store's native transaction handle, inside a Tx (`native` is
// TxContext::native_handle()). Both or neither.
struct BusinessHooks {
  // One-time setup inside a Tx (create a table, a sub-database...).
  std::function<Status(void* native)> prepare;
  std::function<Status(void* native, std::string_view key, std::string_view value)> put;
  // nullopt when the key is absent.
  std::function<Result<std::optional<std::string>>(void* native, std::string_view key)> get;
};

// A store-specific performance pin (SPEC §11): plans, cursor steps... run on a
// fresh fixture with no engine open. OK = the pin holds.
struct PerfPin {
  std::string name;
  std::function<Status(StoreFixture& fixture)> check;
};

struct StoreProfile {
  std::string name;  // used in test names: letters, digits, '_'
  std::function<std::unique_ptr<StoreFixture>()> make_fixture;
  // Declared capabilities; the kit checks they match Store::Capabilities().
  bool exclusive = true;
  CrashModel crash = CrashModel::kProcess;
  std::optional<BusinessHooks> business;  // nullopt: §8 business-write tests skip
  std::vector<PerfPin> pins;              // empty: the PIN grade is "untested"
  // G7: what deletes do to the store's size (mqlite/store.h SpaceMode). The
  // space test checks reuse always, and shrinking only when kShrinks.
  SpaceMode space = SpaceMode::kShrinks;
  // Optional: a wrapper applied to every opened Store (the kit's own mutant
  // tests use it to prove the kit fails broken stores).
  std::function<std::unique_ptr<Store>(std::unique_ptr<Store>)> wrap;
};

// The rerun harness (spec.md §9 "a re-run body must not double-count"):
// `base` with every rerunnable store body run twice in its transaction — the
// first attempt inside a Savepoint that is rolled back, then the real one —
// as LMDB map growth and PostgreSQL retries do. Name gets "_rerun"; pins are
// dropped (they count one attempt). Instantiate it beside the plain profile.
StoreProfile WithRerun(StoreProfile base);

// The suites' parameter.
struct Param {
  StoreProfile profile;
};
void PrintTo(const Param& p, std::ostream* os);

// The base fixture of every kit suite. SetUp creates a fresh StoreFixture and
// opens an engine on it with a ManualClock and background maintenance off;
// TearDown closes everything and destroys the fixture.
class TckTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override;
  void TearDown() override;

  const StoreProfile& profile() const { return GetParam().profile; }
  StoreFixture& fixture() { return *fixture_; }
  ManualClock& clock() { return clock_; }
  // The current engine (valid between SetUp and TearDown, and after Reopen).
  Engine& engine() { return *engine_; }

  // Options for engines this fixture opens: clock = &clock(),
  // background_maintenance = false, the rest default. Tests may change them
  // before calling Reopen().
  EngineOptions& engine_options() { return engine_options_; }

  // Opens an additional engine on the fixture's data with engine_options()
  // (applying profile().wrap). For an exclusive store this fails with
  // DbLocked while the current engine is open.
  Result<std::unique_ptr<Engine>> OpenEngine();
  // Closes the current engine (if any) and opens a new one; ASSERT-fails the
  // test if that does not work.
  void Reopen();
  // Closes and drops the current engine (engine() is invalid until Reopen).
  void CloseEngine();

  // CreateQueue that ASSERT-fails on error; returns the stored config.
  QueueConfig MakeQueue(const QueueConfig& config);
  QueueConfig MakeQueue(std::string name, Ordering ordering = Ordering::kStandard);
  // Send that ASSERT-fails on error; returns the seq.
  int64_t SendOk(std::string_view queue, const OutgoingMessage& m);
  int64_t SendOk(std::string_view queue, std::string body);
  // Receive (Peek-Lock unless `mode`) that ASSERT-fails on error.
  std::vector<Message> ReceiveOk(std::string_view queue, int max = 1,
                                 ReceiveMode mode = ReceiveMode::kPeekLock);
  // Stats that ASSERT-fails on error.
  QueueStats StatsOk(std::string_view queue);
  // Every message of the queue, in seq order (paged Peek).
  std::vector<Message> PeekAll(std::string_view queue);

  // GTEST_SKIP helpers for capabilities: true when the test must skip (the
  // caller does `if (SkipUnlessX()) return;` — the skip is already recorded).
  bool SkipUnlessExclusive();
  bool SkipUnlessShared();
  bool SkipUnlessCrashable();
  bool SkipUnlessBusinessHooks();

 private:
  std::unique_ptr<StoreFixture> fixture_;
  ManualClock clock_;
  EngineOptions engine_options_;
  std::unique_ptr<Engine> engine_;
};

// One fixture class per suite, so a porter's report groups by area.
class TckLifecycle : public TckTest {};     // SPEC §2, §3, §6, §7.1, §7.5, §9 open/close
class TckValidation : public TckTest {};    // SPEC §2, §4, §5, §10 bad input
class TckOrdering : public TckTest {};      // SPEC §5
class TckIdempotency : public TckTest {};   // SPEC §4 dedup, §7.2 receipts, §7.3 attempts
class TckTransactions : public TckTest {};  // SPEC §8
class TckConcurrency : public TckTest {};   // SPEC §5 long-poll, §9, §10, G2 oracle
class TckModel : public TckTest {};         // SPEC §12 model-based test
class TckIntegrity : public TckTest {};     // SPEC §7.4, §7.5 integrity sweep
class TckCrash : public TckTest {};         // SPEC §7.1, §7.5, §8 crash injection
class TckMultiEngine : public TckTest {};   // spec.md §9 shared stores: many engines, one store

// Anchors, one per suite source file, referenced by MQLITE_TCK_INSTANTIATE so
// a static link can never drop a suite.
int AnchorLifecycle();
int AnchorValidation();
int AnchorOrdering();
int AnchorIdempotency();
int AnchorTransactions();
int AnchorConcurrency();
int AnchorModel();
int AnchorIntegrity();
int AnchorCrash();
int AnchorSpace();
int AnchorOperations();
int AnchorMultiEngine();
int AnchorRollback();
// TckLifecycle's files by area (suite_receive.cc, suite_settle.cc, ...).
int AnchorReceive();
int AnchorSettle();
int AnchorDeadLetters();
int AnchorStats();
int AnchorQueues();
int AnchorOpen();
inline int AnchorAll() {
  return AnchorLifecycle() + AnchorValidation() + AnchorOrdering() + AnchorIdempotency() +
         AnchorTransactions() + AnchorConcurrency() + AnchorModel() + AnchorIntegrity() +
         AnchorCrash() + AnchorSpace() + AnchorOperations() + AnchorMultiEngine() +
         AnchorReceive() + AnchorSettle() + AnchorDeadLetters() + AnchorStats() +
         AnchorQueues() + AnchorOpen() + AnchorRollback();
}

// ---- Grade declarations (SPEC §12 grade table) --------------------------------
//
// Every kit test declares the store guarantees it grades, right above its
// TEST_P:
//
//   MQLITE_TCK_GRADES(TckOrdering, Spec5_PriorityOrderWithinOneBatch, "G2", "G3");
//   TEST_P(TckOrdering, Spec5_PriorityOrderWithinOneBatch) { ... }
//
// Contract: one declaration per test, at namespace scope in the file that
// defines the test, with the suite and test names exactly as in TEST_P and at
// least one id from the runner's guarantee table ("G1" … "G8", "PIN"; see
// tck/runner/grades.cc). Name what the test's assertions exercise, not what
// its name suggests: a pass counts for those rows of the grade table, a failure
// fails them. Declarations register at static-initialisation time and are read
// through DeclaredGrades(). The runner checks them before any test runs and
// refuses to grade (exit 2) when a kit test has no declaration, a declaration
// names no registered test, a test is declared twice or an id is unknown;
// `mqlite-tck --check-grades` (the ctest tck.grades.declared) does only that.
struct GradeDeclaration {
  std::string suite;             // fixture class, e.g. "TckOrdering"
  std::string test;              // e.g. "Spec5_PriorityOrderWithinOneBatch"
  std::vector<std::string> ids;  // "G1" … "G8", "PIN"
  const char* file;              // where the declaration is
  int line;
};
// Registers one declaration (MQLITE_TCK_GRADES calls it); returns 0.
int DeclareGrades(const char* suite, const char* test, std::initializer_list<const char*> ids,
                  const char* file, int line);
// Every declaration, in registration order (duplicates included, for the check).
const std::vector<GradeDeclaration>& GradeDeclarations();
// The ids declared for suite.test (the first declaration), or nullptr if none.
const std::vector<std::string>* DeclaredGrades(std::string_view suite, std::string_view test);

}  // namespace mqlite::tck

// Instantiates every kit suite for the profile returned by `profile_fn()` (a
// function visible at global scope). Use once per store, at global namespace
// scope, in the porter's test file.
#define MQLITE_TCK_INSTANTIATE(Name, profile_fn)                                        \
  namespace mqlite::tck {                                                               \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckLifecycle, profile_fn)                          \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckValidation, profile_fn)                         \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckOrdering, profile_fn)                           \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckIdempotency, profile_fn)                        \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckTransactions, profile_fn)                       \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckConcurrency, profile_fn)                        \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckModel, profile_fn)                              \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckIntegrity, profile_fn)                          \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckCrash, profile_fn)                              \
  MQLITE_TCK_INSTANTIATE_SUITE_(Name, TckMultiEngine, profile_fn)                        \
  [[maybe_unused]] static const int mqlite_tck_anchor_##Name = AnchorAll();             \
  }

// Declares the guarantees test Suite.Test grades (see "Grade declarations"
// above): MQLITE_TCK_GRADES(TckOrdering, Spec5_HeadOfLine, "G2", "G3");
#define MQLITE_TCK_GRADES(Suite, Test, ...)                                         \
  [[maybe_unused]] static const int mqlite_tck_grades_##Suite##_##Test##_ =         \
      ::mqlite::tck::DeclareGrades(#Suite, #Test, {__VA_ARGS__}, __FILE__, __LINE__)

#define MQLITE_TCK_INSTANTIATE_SUITE_(Name, Suite, profile_fn)                   \
  INSTANTIATE_TEST_SUITE_P(Name, Suite,                                          \
                           ::testing::Values(Param{::profile_fn()}),              \
                           [](const auto& info) { return info.param.profile.name; });

#endif  // MQLITE_TCK_H_
