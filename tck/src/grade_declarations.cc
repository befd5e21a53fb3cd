// The registry behind MQLITE_TCK_GRADES (tck.h): which guarantees each kit
// test declares it grades. Filled at static-initialisation time by the suite
// files, read by the runner's grade table and its --check-grades.
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mqlite/tck.h"

namespace mqlite::tck {
namespace {

// Function-local so that it exists before the first declaration registers,
// whatever the order in which the suite files are initialised.
std::vector<GradeDeclaration>& Registry() {
  static auto* declarations = new std::vector<GradeDeclaration>();
  return *declarations;
}

}  // namespace

int DeclareGrades(const char* suite, const char* test, std::initializer_list<const char*> ids,
                  const char* file, int line) {
  GradeDeclaration d{suite, test, {}, file, line};
  for (const char* id : ids) d.ids.emplace_back(id);
  Registry().push_back(std::move(d));
  return 0;
}

const std::vector<GradeDeclaration>& GradeDeclarations() { return Registry(); }

const std::vector<std::string>* DeclaredGrades(std::string_view suite, std::string_view test) {
  for (const GradeDeclaration& d : Registry()) {
    if (d.suite == suite && d.test == test) return &d.ids;
  }
  return nullptr;
}

}  // namespace mqlite::tck
