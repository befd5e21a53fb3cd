// The LMDB store's performance pins (SPEC §11), counted in cursor steps by the
// store's probe (stores/lmdb/src/probe.h): the grade table's PIN row and the
// store's own pin test. Each returns "" when it holds, else what deviated.
#ifndef MQLITE_STORES_LMDB_TCK_LMDB_PINS_H_
#define MQLITE_STORES_LMDB_TCK_LMDB_PINS_H_

#include <string>

#include "mqlite/tck.h"

namespace mqlite::tck {

// A Receive of 10 takes the same claim steps behind 50 and 20,000 messages.
std::string LmdbPinClaimIndependentOfBacklog(StoreFixture& fixture);
// Behind a locked group head with 20,000 members waiting, a Receive takes at
// most 2 claim steps (standard with one free message; strict_fifo).
std::string LmdbPinClaimSkipsBlockedGroup(StoreFixture& fixture);
// A maintenance pass over 20,000 scheduled messages with one due takes the
// same steps as over 10 (and at most a handful).
std::string LmdbPinMaintenanceFollowsWhatIsDue(StoreFixture& fixture);
// Dropping expired idempotency records takes dropped + 1 steps per kind.
std::string LmdbPinDropExpiredRecords(StoreFixture& fixture);

// All of them, for the profile's PerfPin.
Status RunLmdbStepPins(StoreFixture& fixture);

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_LMDB_TCK_LMDB_PINS_H_
