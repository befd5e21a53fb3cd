// The SQLite store's performance pins (SPEC §11), shared by the store's own
// plan-pin test and by its conformance-kit profile (the grade table's PIN
// row): every statement of queries.h EXPLAINed over an ANALYZEd mixed backlog
// must seek its named index; no SCAN of a message or idempotency table, no
// temp B-tree, no statement without an expectation.
#ifndef MQLITE_STORES_SQLITE_TCK_SQLITE_PINS_H_
#define MQLITE_STORES_SQLITE_TCK_SQLITE_PINS_H_

#include <map>
#include <string>
#include <vector>

#include "mqlite/clock.h"
#include "mqlite/engine.h"
#include "mqlite/tck.h"

struct sqlite3;

namespace mqlite::tck {

// Statement name (queries.h) → the plan rows it must contain ({} = no plan).
const std::map<std::string, std::vector<std::string>>& SqlitePlanExpectations();
// EXPLAIN QUERY PLAN rows (detail column) of `sql` on `db`.
std::vector<std::string> SqliteExplain(sqlite3* db, const char* sql);
// Checks every catalog statement on `db` (ANALYZE it first). Returns "" when
// every pin holds, else one line per deviation with the offending plan.
std::string CheckSqlitePlans(sqlite3* db);
// Fills three queues (standard, group_fifo, strict_fifo) with `per_queue`
// messages each in every state, through the public API.
Status BuildMixedBacklog(Engine& engine, int per_queue);
// The PIN check of the SQLite kit profile: opens the fixture, builds the
// backlog, ANALYZEs and checks the plans.
Status RunSqlitePlanPins(StoreFixture& fixture);

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_SQLITE_TCK_SQLITE_PINS_H_
