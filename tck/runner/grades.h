// The grade table of SPEC §12: which kit tests stand behind each store
// guarantee G1–G8, plus the store's own performance pins. Each test declares
// its guarantees beside its TEST_P (MQLITE_TCK_GRADES, mqlite/tck.h).
#ifndef MQLITE_TCK_RUNNER_GRADES_H_
#define MQLITE_TCK_RUNNER_GRADES_H_

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace mqlite::tck {

struct Guarantee {
  const char* id;     // "G1" … "G8", "PIN"
  const char* title;  // SPEC §12 wording
  bool required;      // G8 is graded, not required
};

const std::vector<Guarantee>& Guarantees();

// The guarantees a kit test declared (MQLITE_TCK_GRADES), from its suite
// (fixture class, e.g. "TckOrdering") and test name (e.g.
// "Spec5_HeadOfLineSurvivesLeaseExpiry"); empty if it declared none, which
// CheckGradeDeclarations reports.
std::vector<std::string> GuaranteesOf(std::string_view suite, std::string_view test);

// What is wrong with the declarations against the tests registered in `unit`
// (call after InitGoogleTest), one line each: a test without a declaration,
// a declaration of a test that is not registered, a test declared twice, an
// unknown or missing id. Empty when every test declares its guarantees.
std::vector<std::string> CheckGradeDeclarations(const ::testing::UnitTest& unit);

}  // namespace mqlite::tck

#endif  // MQLITE_TCK_RUNNER_GRADES_H_
