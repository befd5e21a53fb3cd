// The whole conformance kit (SPEC §12) on the memory store: every kit suite,
// instantiated for MemoryTckProfile(). Each test gets a fresh MemoryDatabase;
// a reopen is a new store on the same database; crash tests skip (the data
// dies with the process). Memory-only behaviour is in memory_store_test.cc.
#include "memory_profile.h"
#include "mqlite/tck.h"

mqlite::tck::StoreProfile MemoryProfile() { return mqlite::tck::MemoryTckProfile(); }

MQLITE_TCK_INSTANTIATE(Memory, MemoryProfile);
