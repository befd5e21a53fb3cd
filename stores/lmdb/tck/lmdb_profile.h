// The LMDB store's conformance-kit profile (SPEC §12), for the store's own kit
// test (stores/lmdb/tests/tck_lmdb_test.cc) and the kit's runner
// (`mqlite-tck --store lmdb[:DIR]`).
#ifndef MQLITE_STORES_LMDB_TCK_LMDB_PROFILE_H_
#define MQLITE_STORES_LMDB_TCK_LMDB_PROFILE_H_

#include <cstdint>
#include <string>

#include "mqlite/lmdb.h"
#include "mqlite/tck.h"

namespace mqlite::tck {

// name "lmdb" (or `name`); exclusive; CrashModel::kProcess; SpaceMode::kReused;
// business hooks on the application's own sub-database "tck_business",
// opened through the Tx's MDB_txn*; the §11 step pins (lmdb_pins.h).
//
// Each fixture is a fresh directory (mkdtemp) under `base_dir` — the system
// temp directory when empty — holding the environment in "env/"; removed
// when the fixture is destroyed, only by the process that created it.
// `options.dir` is ignored (each fixture has its own); the rest applies to
// every open: the tiny-map profile sets initial_map_bytes to 64 KiB so every
// test grows the map and reruns its bodies many times.
StoreProfile LmdbTckProfile(std::string base_dir = "", LmdbOptions options = {},
                            std::string name = "lmdb");

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_LMDB_TCK_LMDB_PROFILE_H_
