// The conformance kit (SPEC §12) on the LMDB store: every kit suite for the
// default profile, for a tiny-map profile (the map starts at 64 KiB, so every
// test grows it many times and reruns the bodies that hit MDB_MAP_FULL), and
// under the rerun harness (every rerunnable body run twice, the first attempt
// rolled back through a savepoint).
#include "lmdb_profile.h"
#include "mqlite/tck.h"

mqlite::tck::StoreProfile LmdbProfile() { return mqlite::tck::LmdbTckProfile(); }
mqlite::tck::StoreProfile LmdbTinyMapProfile() {
  mqlite::LmdbOptions o;
  o.initial_map_bytes = int64_t{64} << 10;
  mqlite::tck::StoreProfile p = mqlite::tck::LmdbTckProfile("", o, "lmdb_tiny_map");
  p.pins.clear();  // they count one attempt; here bodies rerun as the map grows
  return p;
}
mqlite::tck::StoreProfile LmdbRerunProfile() {
  return mqlite::tck::WithRerun(mqlite::tck::LmdbTckProfile());
}

MQLITE_TCK_INSTANTIATE(Lmdb, LmdbProfile);
MQLITE_TCK_INSTANTIATE(LmdbTinyMap, LmdbTinyMapProfile);
MQLITE_TCK_INSTANTIATE(LmdbRerun, LmdbRerunProfile);
