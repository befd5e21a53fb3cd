// The PostgreSQL store's conformance-kit profile (SPEC §12), for the kit's
// runner (`mqlite-tck --store postgres:URL`).
#ifndef MQLITE_STORES_POSTGRES_TCK_POSTGRES_PROFILE_H_
#define MQLITE_STORES_POSTGRES_TCK_POSTGRES_PROFILE_H_

#include <string>

#include "mqlite/postgres.h"
#include "mqlite/tck.h"

namespace mqlite::tck {

// name "postgres" (or `name`); shared (the multi-engine suite runs);
// CrashModel::kProcess (an engine's process dies, the server keeps what it
// committed); business hooks on the application's own table
// "<schema>.tck_business", written through the Tx's PGconn*.
//
// Each fixture is a fresh PostgreSQL schema ("tck_<pid>_<n>_<random>") in
// the database at `options.url`, dropped when the fixture is destroyed —
// only by the process that created it. `options.schema` is ignored.
StoreProfile PostgresTckProfile(PostgresOptions options, std::string name = "postgres");

}  // namespace mqlite::tck

#endif  // MQLITE_STORES_POSTGRES_TCK_POSTGRES_PROFILE_H_
