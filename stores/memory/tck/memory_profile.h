// The memory store's conformance-kit profile (SPEC §12): what the kit needs to
// run every suite on the memory store. Used by the store's own kit test
// (tck_memory_test.cc) and by the kit's runner (`mqlite-tck --store memory`).
//
//   #include "memory_profile.h"   // target mqlite_memory_tck
//   mqlite::tck::StoreProfile MemoryProfile() { return mqlite::tck::MemoryTckProfile(); }
//   MQLITE_TCK_INSTANTIATE(Memory, MemoryProfile);
#ifndef MQLITE_STORES_MEMORY_TCK_MEMORY_PROFILE_H_
#define MQLITE_STORES_MEMORY_TCK_MEMORY_PROFILE_H_

#include "mqlite/tck.h"

namespace mqlite::tck {

// name "memory" (exclusive) or, with `shared`, "memory_shared": every Open()
// is a shared store on the same database, so the kit's shared-store and
// MultiEngine suites run (several engines over one store, as on a server).
// CrashModel::kNone (crash tests skip: the data dies with the process);
// business hooks on a table "tck_business" through the Tx's MemoryTxn. Each
// fixture is a fresh MemoryDatabase; Open() opens a store on it, so a reopen
// sees every earlier commit. No StorageBytes: the store has no on-disk size
// (the G7 space test skips).
StoreProfile MemoryTckProfile(bool shared = false);

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_MEMORY_TCK_MEMORY_PROFILE_H_
