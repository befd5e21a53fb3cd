// The PostgreSQL store's §11 pins, for its kit profile: every statement the
// store runs (queries.h) is EXPLAINed (FORMAT JSON) with the plans the
// server may use for it — custom, and generic unless it is planned each
// time — on an ANALYZEd data set of 100,000 messages and 20,000
// records of each idempotency kind: each seeks its named index, none scans
// or sorts the backlog (the few that are proportional to a queue by
// definition say why); and a claim of 10 touches the same shared buffers
// behind 50 and behind 20,000 blocked members of a group.
#ifndef MQLITE_STORES_POSTGRES_TCK_POSTGRES_PINS_H_
#define MQLITE_STORES_POSTGRES_TCK_POSTGRES_PINS_H_

#include <string>

#include "mqlite/tck.h"

namespace mqlite::tck {

// `fixture` is a fresh data set whose store lives in `schema` of the
// database at `url`.
Status RunPostgresPlanPins(StoreFixture& fixture, const std::string& url,
                           const std::string& schema);

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_POSTGRES_TCK_POSTGRES_PINS_H_
