#include "grades.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "mqlite/tck.h"

namespace mqlite::tck {
namespace {

// "Store/TckOrdering" -> "TckOrdering"; "Spec5_HeadOfLine/memory" -> "Spec5_HeadOfLine".
std::string SuiteName(std::string_view registered) {
  auto pos = registered.find('/');
  return std::string(pos == std::string_view::npos ? registered : registered.substr(pos + 1));
}
std::string TestName(std::string_view registered) {
  return std::string(registered.substr(0, registered.find('/')));
}

std::string Where(const GradeDeclaration& d) {
  return std::string(d.file ? d.file : "?") + ":" + std::to_string(d.line);
}

}  // namespace

const std::vector<Guarantee>& Guarantees() {
  static const auto* g = new std::vector<Guarantee>{
      {"G1", "durable ordered enqueue: strictly increasing, never-reused seq", true},
      {"G2", "atomic claim: select and lock are one step; exactly one claimer wins", true},
      {"G3", "ordered per-state and per-group lookup in O(log n)", true},
      {"G4", "secondary lookups: dedup keys, DLQ scans, expiry by deadline, receipts", true},
      {"G5", "multi-operation ACID transactions the application can join (outbox)", true},
      {"G6", "recovery from data alone: locks are rows, a crash leaves a consistent state", true},
      {"G7", "space reclaimed after deletes; retention bounds hold", true},
      {"G8", "embeddable: no server, one file or directory to copy (graded, not required)", false},
      {"PIN", "the store's own performance pins (SPEC §11)", true},
  };
  return *g;
}

std::vector<std::string> GuaranteesOf(std::string_view suite, std::string_view test) {
  const std::vector<std::string>* ids = DeclaredGrades(suite, test);
  return ids ? *ids : std::vector<std::string>{};
}

std::vector<std::string> CheckGradeDeclarations(const ::testing::UnitTest& unit) {
  std::vector<std::string> problems;
  std::set<std::string> known_ids;
  for (const Guarantee& g : Guarantees()) known_ids.insert(g.id);

  // Every registered test (the --filter does not matter: declarations are static).
  std::set<std::pair<std::string, std::string>> registered;
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite* ts = unit.GetTestSuite(i);
    for (int j = 0; j < ts->total_test_count(); ++j) {
      const ::testing::TestInfo* t = ts->GetTestInfo(j);
      if (std::string_view(ts->name()) == "GoogleTestVerification") {
        // GoogleTest's own check: a TEST_P suite that no instantiation covers.
        problems.push_back(std::string(t->name()) +
                           ": a kit suite is not instantiated (add it to MQLITE_TCK_INSTANTIATE)");
        continue;
      }
      registered.emplace(SuiteName(ts->name()), TestName(t->name()));
    }
  }

  std::map<std::pair<std::string, std::string>, const GradeDeclaration*> first;
  for (const GradeDeclaration& d : GradeDeclarations()) {
    const std::string name = d.suite + "." + d.test;
    auto [it, fresh] = first.emplace(std::make_pair(d.suite, d.test), &d);
    if (!fresh) {
      problems.push_back(Where(d) + ": " + name + " is declared again (first at " +
                         Where(*it->second) + ")");
    }
    if (!registered.count({d.suite, d.test})) {
      problems.push_back(Where(d) + ": MQLITE_TCK_GRADES names " + name +
                         ", which is not a registered test");
    }
    if (d.ids.empty()) problems.push_back(Where(d) + ": " + name + " declares no guarantee");
    for (const std::string& id : d.ids) {
      if (!known_ids.count(id)) {
        problems.push_back(Where(d) + ": " + name + " declares unknown guarantee '" + id + "'");
      }
    }
  }
  for (const auto& [suite, test] : registered) {
    if (!first.count({suite, test})) {
      problems.push_back(suite + "." + test +
                         " declares no guarantee: add MQLITE_TCK_GRADES(" + suite + ", " + test +
                         ", \"G…\") above its TEST_P");
    }
  }
  return problems;
}

}  // namespace mqlite::tck
