// mqlite-tck: runs the conformance kit (SPEC §12) against one store and prints
// a grade table — each guarantee G1–G8 and the store's performance pins,
// pass/fail with the tests behind it.
//
//   mqlite-tck --store sqlite[:DIR] | lmdb[:DIR] | postgres:URL|@FILE | memory[:shared]
//              [--durability normal|full|process_only]
//              [--rerun] [--json FILE|-] [--filter PATTERN]
//   (--durability: the SPEC §10 level every sqlite/lmdb/postgres open uses; default normal)
//   (--rerun: every rerunnable store body runs twice, the first attempt rolled
//    back — the rerun harness, tck::WithRerun)
//   mqlite-tck --store sqlite --mutant NAME --expect-fail   (the kit must fail)
//   mqlite-tck --list-mutants
//   mqlite-tck --check-grades   (every kit test declares its guarantees; no test runs)
//
// Exit status: 0 when every test passed (skips allowed); 1 when any failed;
// 2 for bad usage, including a store argument that does not work: before any
// test runs, the runner opens (and removes) a probe store, so an unknown
// store, a missing or unwritable directory, or a file that cannot be opened is
// one line on stderr and exit 2. With --expect-fail the meaning flips: 0 only if the kit
// failed at least one test (it stops at the first failure). A kit whose grade
// declarations (MQLITE_TCK_GRADES) are incomplete or wrong cannot grade: the
// problems go to stderr and the exit status is 2, before any test runs;
// --check-grades stops there (0 when the declarations are sound).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grades.h"
#include "mqlite/tck.h"
#include "mutants.h"
#include "profiles.h"

namespace mqlite::tck {

// The profile chosen on the command line; MQLITE_TCK_INSTANTIATE below reads
// it when GoogleTest registers the suites (inside InitGoogleTest).
StoreProfile& Selected() {
  static StoreProfile* p = new StoreProfile();
  return *p;
}

}  // namespace mqlite::tck

mqlite::tck::StoreProfile RunnerSelectedProfile() { return mqlite::tck::Selected(); }

MQLITE_TCK_INSTANTIATE(Store, RunnerSelectedProfile);

namespace mqlite::tck {
namespace {

struct TestRecord {
  std::string suite;  // fixture class, e.g. TckOrdering
  std::string name;   // e.g. Spec5_HeadOfLine
  std::string result; // pass | fail | skip
  int64_t ms = 0;
  std::string failure;
};

std::string Strip(const std::string& s, bool before_slash) {
  auto pos = before_slash ? s.find('/') : s.rfind('/');
  if (pos == std::string::npos) return s;
  return before_slash ? s.substr(pos + 1) : s.substr(0, pos);
}

// Progress on stdout, one line per test; failures with their messages.
class Progress : public ::testing::EmptyTestEventListener {
 public:
  explicit Progress(std::vector<TestRecord>* records) : records_(records) {}

  void OnTestProgramStart(const ::testing::UnitTest& u) override {
    total_ = u.test_to_run_count();
    std::printf("mqlite-tck: %d tests for store '%s'\n", total_, Selected().name.c_str());
    std::fflush(stdout);
  }
  void OnTestStart(const ::testing::TestInfo&) override { failure_.clear(); }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) {
      failure_ += std::string(r.file_name() ? r.file_name() : "?") + ":" +
                  std::to_string(r.line_number()) + ": " + r.summary() + "\n";
    }
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    TestRecord rec;
    rec.suite = Strip(info.test_suite_name(), true);
    rec.name = Strip(info.name(), false);
    const auto* r = info.result();
    rec.result = r->Failed() ? "fail" : r->Skipped() ? "skip" : "pass";
    rec.ms = r->elapsed_time();
    rec.failure = failure_;
    ++done_;
    std::printf("[%4d/%d] %-4s %s.%s (%lld ms)\n", done_, total_,
                rec.result == "pass" ? "ok" : rec.result == "fail" ? "FAIL" : "skip",
                rec.suite.c_str(), rec.name.c_str(), static_cast<long long>(rec.ms));
    if (!failure_.empty()) std::printf("%s", failure_.c_str());
    std::fflush(stdout);
    records_->push_back(std::move(rec));
  }

 private:
  std::vector<TestRecord>* records_;
  std::string failure_;
  int total_ = 0;
  int done_ = 0;
};

struct Grade {
  const Guarantee* g;
  int pass = 0, fail = 0, skip = 0;
  std::vector<const TestRecord*> tests{};
  std::string Result(const StoreProfile& p) const {
    if (std::string(g->id) == "G8") {
      return p.exclusive && p.crash == CrashModel::kProcess ? "yes" : "no";
    }
    if (fail > 0) return "FAIL";
    if (pass == 0) return "untested";
    return "PASS";
  }
};

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o;
}

int Usage(const char* msg) {
  std::fprintf(stderr,
               "mqlite-tck: %s\n"
               "usage: mqlite-tck --store STORE [--durability normal|full|process_only] [--rerun]\n"
               "                  [--json FILE|-] [--filter GTEST_PATTERN]\n"
               "                  [--mutant NAME --expect-fail] [--list-mutants]\n"
               "       mqlite-tck --check-grades\n"
               "stores: %s\n",
               msg, KnownStores().c_str());
  return 2;
}

// Opens and closes one store of `profile` in a fixture of its own (whose
// destruction removes the probe's files).
Status ProbeStore(const StoreProfile& profile) {
  if (!profile.make_fixture) return Status::InvalidArgument("the profile makes no fixtures");
  std::unique_ptr<StoreFixture> fixture = profile.make_fixture();
  if (!fixture) {
    return Status::InvalidArgument(
        "cannot create a test data set there (the profile's own message, if any, is above)");
  }
  Result<std::unique_ptr<Store>> store = fixture->Open();
  if (!store.has_value()) return store.error();
  return Status::OK();
}

int Main(int argc, char** argv) {
  std::string store, json, filter, mutant;
  Durability durability = Durability::kNormal;
  bool expect_fail = false;
  bool check_grades = false;
  bool rerun = false;
  std::vector<char*> gtest_args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)flag;
      return argv[++i];
    };
    if (a == "--store") {
      const char* v = value("--store");
      if (!v) return Usage("--store needs a value");
      store = v;
    } else if (a == "--durability") {
      const char* v = value("--durability");
      if (!v) return Usage("--durability needs normal, full or process_only");
      Result<Durability> d = ParseDurability(v);
      if (!d.ok()) return Usage(d.error().ToString().c_str());
      durability = *d;
    } else if (a == "--json") {
      const char* v = value("--json");
      if (!v) return Usage("--json needs a file name or -");
      json = v;
    } else if (a == "--filter") {
      const char* v = value("--filter");
      if (!v) return Usage("--filter needs a pattern");
      filter = v;
    } else if (a == "--mutant") {
      const char* v = value("--mutant");
      if (!v) return Usage("--mutant needs a name");
      mutant = v;
    } else if (a == "--rerun") {
      rerun = true;
    } else if (a == "--expect-fail") {
      expect_fail = true;
    } else if (a == "--check-grades") {
      check_grades = true;
    } else if (a == "--list-mutants") {
      for (const Mutant& m : Mutants()) std::printf("%-28s %s\n", m.name, m.description);
      return 0;
    } else if (a == "--help" || a == "-h") {
      Usage("conformance kit runner");
      return 0;
    } else {
      return Usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (store.empty() && !check_grades) return Usage("--store is required");
  if (store.empty()) {
    // --check-grades alone: registering the suites needs a profile name, no store.
    Selected().name = "check";
  } else {
    auto profile = MakeProfile(store, durability);
    if (!profile.ok()) return Usage(profile.error().ToString().c_str());
    Selected() = rerun ? WithRerun(std::move(*profile)) : std::move(*profile);
    // A store argument that cannot work (a directory that does not exist or
    // cannot be written, a file that cannot be opened) is a usage error, found
    // by actually opening a probe store — never 200 failing tests.
    if (Status probe = ProbeStore(Selected()); !probe.ok()) {
      std::fprintf(stderr, "mqlite-tck: --store '%s' is not usable: %s\n", store.c_str(),
                   std::string(probe.message()).c_str());
      return 2;
    }
  }
  if (!mutant.empty()) {
    const Mutant* m = FindMutant(mutant);
    if (!m) return Usage(("unknown mutant '" + mutant + "' (see --list-mutants)").c_str());
    m->apply(&Selected());
    std::printf("mqlite-tck: store wrapped by mutant '%s': %s\n", m->name, m->description);
  }

  std::string filter_flag = "--gtest_filter=" + (filter.empty() ? std::string("*") : filter);
  gtest_args.push_back(filter_flag.data());
  if (expect_fail) gtest_args.push_back(const_cast<char*>("--gtest_fail_fast"));
  int gargc = static_cast<int>(gtest_args.size());
  gtest_args.push_back(nullptr);  // argv[argc] == nullptr, as InitGoogleTest expects
  ::testing::InitGoogleTest(&gargc, gtest_args.data());
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  std::vector<TestRecord> records;
  listeners.Append(new Progress(&records));

  // The grade table needs every test's declared guarantees (MQLITE_TCK_GRADES).
  std::vector<std::string> problems = CheckGradeDeclarations(*::testing::UnitTest::GetInstance());
  for (const std::string& p : problems) std::fprintf(stderr, "mqlite-tck: %s\n", p.c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "mqlite-tck: %zu grade declaration problem(s); cannot grade\n",
                 problems.size());
    return 2;
  }
  if (check_grades) {
    std::printf("mqlite-tck: every kit test declares its guarantees (%zu declarations)\n",
                GradeDeclarations().size());
    return 0;
  }

  auto start = std::chrono::steady_clock::now();
  int rc = RUN_ALL_TESTS();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Grade.
  std::vector<Grade> grades;
  for (const Guarantee& g : Guarantees()) grades.push_back(Grade{&g});
  int pass = 0, fail = 0, skip = 0;
  for (const TestRecord& r : records) {
    (r.result == "pass" ? pass : r.result == "fail" ? fail : skip)++;
    for (const std::string& id : GuaranteesOf(r.suite, r.name)) {
      for (Grade& gr : grades) {
        if (id == gr.g->id) {
          (r.result == "pass" ? gr.pass : r.result == "fail" ? gr.fail : gr.skip)++;
          gr.tests.push_back(&r);
        }
      }
    }
  }
  const StoreProfile& p = Selected();
  std::printf("\nmqlite TCK grade — store '%s' (%s, crash model %s%s)\n", p.name.c_str(),
              p.exclusive ? "exclusive" : "shared",
              p.crash == CrashModel::kProcess ? "process" : "none",
              p.business ? ", native-handle business hooks" : "");
  std::printf("  %-4s %-8s %-26s %s\n", "id", "result", "tests pass/fail/skip", "guarantee");
  for (const Grade& gr : grades) {
    std::printf("  %-4s %-8s %-26s %s\n", gr.g->id, gr.Result(p).c_str(),
                (std::to_string(gr.pass) + "/" + std::to_string(gr.fail) + "/" +
                 std::to_string(gr.skip))
                    .c_str(),
                gr.g->title);
    for (const TestRecord* t : gr.tests) {
      if (t->result == "fail") std::printf("         failed: %s.%s\n", t->suite.c_str(), t->name.c_str());
    }
  }
  std::printf("\n%d tests: %d passed, %d failed, %d skipped in %.1f s\n",
              static_cast<int>(records.size()), pass, fail, skip, secs);

  if (!json.empty()) {
    std::ostringstream o;
    o << "{\n  \"store\": \"" << JsonEscape(p.name) << "\",\n  \"exclusive\": "
      << (p.exclusive ? "true" : "false") << ",\n  \"crash_model\": \""
      << (p.crash == CrashModel::kProcess ? "process" : "none") << "\",\n  \"mutant\": \""
      << JsonEscape(mutant) << "\",\n  \"totals\": {\"tests\": " << records.size()
      << ", \"passed\": " << pass << ", \"failed\": " << fail << ", \"skipped\": " << skip
      << ", \"seconds\": " << secs << "},\n  \"guarantees\": [\n";
    for (size_t i = 0; i < grades.size(); ++i) {
      const Grade& gr = grades[i];
      o << "    {\"id\": \"" << gr.g->id << "\", \"title\": \"" << JsonEscape(gr.g->title)
        << "\", \"required\": " << (gr.g->required ? "true" : "false") << ", \"result\": \""
        << gr.Result(p) << "\", \"tests\": [";
      for (size_t k = 0; k < gr.tests.size(); ++k) {
        const TestRecord* t = gr.tests[k];
        o << (k ? ", " : "") << "{\"test\": \"" << JsonEscape(t->suite + "." + t->name)
          << "\", \"result\": \"" << t->result << "\"}";
      }
      o << "]}" << (i + 1 < grades.size() ? "," : "") << "\n";
    }
    o << "  ]\n}\n";
    if (json == "-") {
      std::cout << o.str();
    } else {
      std::ofstream f(json);
      f << o.str();
      if (!f) {
        std::fprintf(stderr, "mqlite-tck: cannot write %s\n", json.c_str());
        return 1;
      }
    }
  }
  if (expect_fail) {
    if (fail > 0) {
      std::printf("mqlite-tck: the kit caught mutant '%s' (as expected)\n", mutant.c_str());
      return 0;
    }
    std::printf("mqlite-tck: the kit did NOT catch mutant '%s'\n", mutant.c_str());
    return 1;
  }
  return rc == 0 && fail == 0 ? 0 : 1;
}

}  // namespace
}  // namespace mqlite::tck

int main(int argc, char** argv) { return mqlite::tck::Main(argc, argv); }
