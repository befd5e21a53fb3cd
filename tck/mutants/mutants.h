// Deliberately broken stores (SPEC §12: a kit that cannot fail grades
// nothing). Each mutant rewrites a StoreProfile so that every store it opens
// is wrapped in a StoreWrapper (or its business hooks are bent) that breaks
// one guarantee. `mqlite-tck --mutant NAME --expect-fail` must fail for every
// one; the mutants test in tck/ checks exactly that.
#ifndef MQLITE_TCK_MUTANTS_MUTANTS_H_
#define MQLITE_TCK_MUTANTS_MUTANTS_H_

#include <functional>
#include <vector>

#include "mqlite/tck.h"

namespace mqlite::tck {

struct Mutant {
  const char* name;
  const char* description;
  std::function<void(StoreProfile*)> apply;
};

const std::vector<Mutant>& Mutants();
const Mutant* FindMutant(std::string_view name);

}  // namespace mqlite::tck

#endif  // MQLITE_TCK_MUTANTS_MUTANTS_H_
