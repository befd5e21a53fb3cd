// The PostgreSQL store: a shared store (SPEC §9) — many engines in many
// processes on one database, every table in a PostgreSQL schema of its own.
// Design, concurrency rules, durability and the native handle's rules:
// docs/postgres-store.md.
#ifndef MQLITE_POSTGRES_H_
#define MQLITE_POSTGRES_H_

#include <memory>
#include <string>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

typedef struct pg_conn PGconn;  // from <libpq-fe.h>; this header does not include it

namespace mqlite {

class TxContext;

struct PostgresOptions {
  std::string url;                 // libpq URI or key=value string
  std::string schema = "mqlite";   // 1–63 bytes of [a-z0-9_]; created if missing
  int pool_size = 8;               // connections for transactions (≥ 1)
  // normal and full: synchronous_commit=on; process_only: off (a server
  // crash may lose the last commits, never corrupts).
  Durability durability = Durability::kNormal;
  bool change_feed = true;  // LISTEN/NOTIFY wake-ups across engines
  // How long a queue's record, once read, may serve this engine's writes
  // without being read again (0–3,600,000 ms; 0: read it in every
  // transaction). A change this engine makes is seen at once; another
  // engine's, when the change feed reports it (milliseconds), and after
  // this long at most when notifications are lost or change_feed is off
  // (docs/postgres-store.md, "Round trips").
  int64_t queue_cache_ms = 1000;
  // Wake-ups per queue coalesced over this window (0–1,000 ms; 0: every
  // transaction that may have made a message claimable notifies). Within a
  // window a queue's first change is announced with its COMMIT and the rest
  // by one notification at the window's end, so another engine's long-poll
  // wakes within about this long of any change (docs/postgres-store.md,
  // "Change feed"). Only queues some engine watches are announced: a
  // long-poll that slept this long without a wake-up watches its queue and
  // claims again.
  int64_t notify_coalesce_ms = 10;
};

// The schema version token this build writes and accepts (SPEC §10).
extern const char* const kPostgresSchemaToken;

// Connects, builds the schema if missing (once, under an advisory lock) and
// checks its token. Refused with nothing changed: InvalidArgument (options),
// Unavailable (server unreachable, login refused), SchemaVersionMismatch.
Result<std::unique_ptr<Store>> OpenPostgresStore(const PostgresOptions& options);

// The PGconn* of a running Tx (SPEC §8), inside the Tx's transaction: never
// BEGIN/COMMIT/ROLLBACK through it, never keep it. InvalidArgument on another
// kind of store or after the callback returned.
Result<PGconn*> PostgresHandle(TxContext& tx);

}  // namespace mqlite

#endif  // MQLITE_POSTGRES_H_
