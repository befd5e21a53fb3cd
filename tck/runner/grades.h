// The grade table of SPEC §12: which kit tests stand behind each store
// guarantee G1–G8, plus the store's own performance pins.
#ifndef MQLITE_TCK_RUNNER_GRADES_H_
#define MQLITE_TCK_RUNNER_GRADES_H_

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

// The guarantees a kit test stands behind, from its suite (fixture class,
// e.g. "TckOrdering") and test name (e.g. "Spec5_HeadOfLineSurvivesLeaseExpiry").
// Every kit test maps to at least one guarantee.
std::vector<std::string> GuaranteesOf(std::string_view suite, std::string_view test);

}  // namespace mqlite::tck

#endif  // MQLITE_TCK_RUNNER_GRADES_H_
