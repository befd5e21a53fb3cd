// Counted cursor steps of the LMDB store, for its §11 pins
// (stores/lmdb/tck/lmdb_pins.cc): they prove a claim never visits a blocked
// group member and maintenance never walks a backlog.
#ifndef MQLITE_STORES_LMDB_SRC_PROBE_H_
#define MQLITE_STORES_LMDB_SRC_PROBE_H_

#include <atomic>
#include <cstdint>

#include "mqlite/store.h"

namespace mqlite::lmdb_internal {

struct Probe {
  std::atomic<int64_t> claim_steps{0};        // claim-index entries Claim looked at
  std::atomic<int64_t> maintenance_steps{0};  // due/lease/ttl/dlq/expiry entries maintenance looked at
  std::atomic<int64_t> map_full_reruns{0};    // bodies that met MDB_MAP_FULL and grew the map
};

// The probe of an LMDB store; nullptr for any other store.
Probe* ProbeOf(Store* store);

// The environment flags this build opens with for `durability` (the golden
// test pins them: MDB_NOSYNC only at kProcessOnly; never MDB_WRITEMAP or
// MDB_MAPASYNC). The bench's raw-LMDB floor opens with the same flags.
unsigned EnvFlagsFor(Durability durability);

}  // namespace mqlite::lmdb_internal

#endif  // MQLITE_STORES_LMDB_SRC_PROBE_H_
