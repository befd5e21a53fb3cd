// The stores this runner was built with, by name (`--store NAME[:ARG]`).
#ifndef MQLITE_TCK_RUNNER_PROFILES_H_
#define MQLITE_TCK_RUNNER_PROFILES_H_

#include <string>

#include "mqlite/status.h"
#include "mqlite/tck.h"

namespace mqlite::tck {

// "sqlite" or "sqlite:DIR" (the kit's database files go under DIR, default
// the system temp dir); "lmdb" or "lmdb:DIR" (likewise, one environment per
// test); "memory" or "memory:shared". InvalidArgument for anything else.
Result<StoreProfile> MakeProfile(const std::string& spec);
std::string KnownStores();

}  // namespace mqlite::tck

#endif  // MQLITE_TCK_RUNNER_PROFILES_H_
