// One PostgreSQL transaction around a store body, with the retry rules
// SPEC §10 allows a shared store (issue "PostgreSQL store", LESSONS):
//
//   1. A connection from the pool; the wait gives up with Cancelled on the
//      call's deadline or stop token, having done nothing.
//   2. A write: BEGIN READ WRITE and, when the call has a deadline, the
//      transaction's lock_timeout set to the time left (with the first
//      statement), so a lock wait ends as Cancelled instead of outliving
//      the caller. A read runs
//      its statements in autocommit, each in a snapshot of its own — what
//      READ COMMITTED gives inside a transaction too — saving the BEGIN and
//      COMMIT round trips; the pool's sessions default to read-only
//      transactions (kReadOnlyByDefault), so a write in a read is refused.
//   3. The body. If it returns OK while the transaction has failed (a
//      statement errored and the body — application code in a Tx — carried
//      on), the transaction is rolled back and the call fails: PostgreSQL
//      would answer COMMIT with ROLLBACK, and nothing may look committed.
//   4. COMMIT, its result tag checked (PgConn::Commit) — unless the body's
//      final call already sent it with its own statement
//      (StoreTxn::FinalCallFollows, PgConn::ExecAndCommit).
//
// Only a rerunnable body (RunOptions::rerunnable; never a Tx) runs again,
// and only after a serialization failure or deadlock, or a connection lost
// before COMMIT was sent — each a case where nothing committed. A connection
// lost while COMMIT was in flight is OutcomeUnknown and never retried. At
// most kMaxAttempts runs, with a short jittered pause between them that
// respects the deadline and stop token.
#ifndef MQLITE_STORES_POSTGRES_SRC_TXN_RUNNER_H_
#define MQLITE_STORES_POSTGRES_SRC_TXN_RUNNER_H_

#include <functional>
#include <string_view>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "pg_conn.h"
#include "pool.h"

namespace mqlite::pg_internal {

inline constexpr int kMaxAttempts = 5;

// Session setup RunTransaction needs from the pool (PgPoolOptions::
// session_setup): a statement outside BEGIN READ WRITE cannot write.
inline constexpr char kReadOnlyByDefault[] = "SET default_transaction_read_only TO on";
// Every prepared statement of the session on its generic plan (queries.h).
inline constexpr char kGenericPlans[] = "SET plan_cache_mode TO force_generic_plan";

struct TxnCounters {
  int attempts = 0;  // bodies run by the last call
};

// Runs `body` on a leased connection inside one transaction (see above).
// `what` names the call in errors.
Status RunTransaction(PgPool& pool, const RunOptions& options, bool read_only,
                      std::string_view what, const std::function<Status(PgConn&)>& body,
                      TxnCounters* counters = nullptr);

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_SRC_TXN_RUNNER_H_
