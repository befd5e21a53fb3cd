// The PostgreSQL layout (SPEC §10): every table of the store in one
// PostgreSQL schema of its own (default "mqlite"), so an application's
// tables in the same database never collide with it. Changing any statement
// requires a new kPostgresSchemaToken: data written under another token is
// refused with SchemaVersionMismatch, untouched. The layout the server
// actually builds is pinned by a golden test (tests/schema_test.cc).
//
// Design, after the SQLite store's (docs/sqlite-store.md):
// - One row per message; state is a column; seq comes from the sequence
//   message_seq, so it is never reused. Within one (queue, group) seqs also
//   commit in increasing order because every membership change takes that
//   group's advisory transaction lock before it draws a seq (spec.md §9).
// - is_head marks an ungrouped message and the lowest-seq live member of
//   each group; the claim index holds only active heads, so members of a
//   blocked group are never visited.
// - One partial index per state path; every claim, settle and maintenance
//   statement seeks one of them (§11, pinned with EXPLAIN).
// - Byte strings are bytea (NUL bytes round-trip); NULL = absent.
#ifndef MQLITE_STORES_POSTGRES_SRC_SCHEMA_H_
#define MQLITE_STORES_POSTGRES_SRC_SCHEMA_H_

#include <string>
#include <string_view>
#include <vector>

#include "mqlite/postgres.h"
#include "mqlite/status.h"
#include "pg_conn.h"

namespace mqlite::pg_internal {

using ::mqlite::kPostgresSchemaToken;  // "mqlite-postgres-1" (mqlite/postgres.h)

// `tmpl` with every "{s}" replaced by `schema` (a checked name).
std::string FillSchema(std::string_view tmpl, std::string_view schema);

// A schema name the store accepts: 1–63 bytes of [a-z0-9_], not starting
// with a digit (so it never needs quoting). InvalidArgument otherwise.
Status CheckSchemaName(std::string_view schema);

// The statements that build the layout in `schema` (a checked name), in
// order; the last records the token.
std::vector<std::string> SchemaDdl(std::string_view schema);

// Builds the layout in `schema` if it is not there, then checks its token.
// Runs in one transaction on `conn` (which must be idle) under an advisory
// transaction lock on the schema's name, so engines opening together build
// it exactly once and the others wait, then find it. Refused, with nothing
// changed:
//   SchemaVersionMismatch  the schema records another token, or holds
//                          tables but no mqlite token (someone else's);
//   InvalidArgument        a bad schema name.
// Connection and server errors as classified by PgConn.
Status EnsureSchema(PgConn& conn, std::string_view schema);

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_SRC_SCHEMA_H_
