// The stores this runner was built with, by name (`--store NAME[:ARG]`).
#ifndef MQLITE_TCK_RUNNER_PROFILES_H_
#define MQLITE_TCK_RUNNER_PROFILES_H_

#include <string>

#include "mqlite/status.h"
#include "mqlite/tck.h"
#include "mqlite/types.h"

namespace mqlite::tck {

// "sqlite" or "sqlite:DIR" (the kit's database files go under DIR, default
// the system temp dir); "lmdb" or "lmdb:DIR" (likewise, one environment per
// test); "memory" or "memory:shared". InvalidArgument for anything else.
// `durability` (SPEC §10) applies to every open of the sqlite and lmdb
// stores; the memory store has none, so anything but kNormal is refused.
Result<StoreProfile> MakeProfile(const std::string& spec,
                                 Durability durability = Durability::kNormal);
std::string KnownStores();

}  // namespace mqlite::tck

#endif  // MQLITE_TCK_RUNNER_PROFILES_H_
