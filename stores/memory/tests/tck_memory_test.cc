// The whole conformance kit (SPEC §12) on the memory store: every kit suite,
// instantiated for MemoryTckProfile() in both modes — exclusive ("memory")
// and shared ("memory_shared": several engines over one store, which runs the
// shared-store and MultiEngine suites) — and once more under the rerun
// harness (WithRerun: every rerunnable body runs twice). Each test gets a
// fresh MemoryDatabase; a reopen is a new store on the same database; crash
// tests skip (the data dies with the process). Memory-only behaviour is in
// memory_store_test.cc.
#include "memory_profile.h"
#include "mqlite/tck.h"

mqlite::tck::StoreProfile MemoryProfile() { return mqlite::tck::MemoryTckProfile(); }
mqlite::tck::StoreProfile MemorySharedProfile() {
  return mqlite::tck::MemoryTckProfile(/*shared=*/true);
}
mqlite::tck::StoreProfile MemoryRerunProfile() {
  return mqlite::tck::WithRerun(mqlite::tck::MemoryTckProfile());
}
mqlite::tck::StoreProfile MemorySharedRerunProfile() {
  return mqlite::tck::WithRerun(mqlite::tck::MemoryTckProfile(/*shared=*/true));
}

MQLITE_TCK_INSTANTIATE(Memory, MemoryProfile);
MQLITE_TCK_INSTANTIATE(MemoryShared, MemorySharedProfile);
MQLITE_TCK_INSTANTIATE(MemoryRerun, MemoryRerunProfile);
MQLITE_TCK_INSTANTIATE(MemorySharedRerun, MemorySharedRerunProfile);
