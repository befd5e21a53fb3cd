// Every statement the PostgreSQL store prepares, named, in one place. "{s}"
// is the store's schema, filled in at open (PgQueries). The plan pins
// (tck/postgres_pins.cc) EXPLAIN exactly these texts (SPEC §11). The store's
// sessions run them on generic plans (plan_cache_mode = force_generic_plan,
// pg_store.cc): planned once per session, not per execution — planning the
// claim for its values took longer than running it. The pins hold every
// prepared statement's generic plan to its index on 100k ANALYZEd rows (a
// plan made on an empty, never-analyzed table is not: maintenance ANALYZEs
// such a table early, pg_store.cc ReclaimSpace); the few statements a
// generic plan would scan are plan_each_time (their values written in,
// planned each run). Where an
// ORDER BY names an index's leading equality columns, it is there to make
// that index's order the one the planner wants.
//
// Concurrency (spec.md §9 "Shared stores"): the transitions end in
// MQ_CAS — they change a row only if it still has the state, token and
// lease the store read — and report through their row count whether they
// did; membership changes run under the group's advisory lock
// (kXactLock / kXactTryLock, taken as statements of their own so later
// statements see what the previous holder committed).
#ifndef MQLITE_STORES_POSTGRES_SRC_QUERIES_H_
#define MQLITE_STORES_POSTGRES_SRC_QUERIES_H_

#include <array>
#include <string>
#include <string_view>

#include "pg_conn.h"
#include "schema.h"

namespace mqlite::pg_internal {

#define MQ_MSG_COLS                                                                           \
  "seq, state, priority, enqueued_at, visible_at, expires_at, delivery_count, locked_until, " \
  "lock_token, dead_lettered_at, dead_letter_reason, dead_letter_description, message_id, "  \
  "group_id, subject, correlation_id, content_type, properties, body"

// The CTEs c, o and u of an all-or-nothing Peek-Lock claim (pg_store.cc
// Claim): the first $2 candidates of queue $1, locked FOR UPDATE SKIP LOCKED
// in claim order; and — only if every one would be delivered as it is (not
// expired at $3, fewer than $4 deliveries) and `cond` (SQL ending in a space,
// or "") holds — each locked to its token (the $6-byte slice of $5 at its
// position) until $7, RETURNING MQ_MSG_COLS.
#define MQ_CLAIM_ALL_OR_NOTHING(cond)                                                        \
  "c AS MATERIALIZED (SELECT seq, priority, expires_at, delivery_count "                     \
  "FROM {s}.messages WHERE queue_id = $1 AND state = 0 AND is_head "                        \
  "ORDER BY priority DESC, seq LIMIT $2 FOR UPDATE SKIP LOCKED), "                          \
  "o AS MATERIALIZED (SELECT seq AS o_seq, row_number() OVER (ORDER BY priority DESC, seq) " \
  "AS pos, NOT ((expires_at > 0 AND expires_at <= $3) OR delivery_count >= $4) AS ok FROM c), " \
  "u AS (UPDATE {s}.messages m SET state = 1, lock_token = substring($5::bytea FROM "        \
  "(((SELECT pos FROM o WHERE o_seq = m.seq) - 1) * $6 + 1)::integer FOR $6::integer), "    \
  "locked_until = $7, delivery_count = m.delivery_count + 1 "                                \
  "WHERE m.seq = ANY (ARRAY(SELECT o_seq FROM o)) AND NOT EXISTS (SELECT 1 FROM o WHERE NOT ok) " \
  cond "RETURNING " MQ_MSG_COLS ")"

#define MQ_QUEUE_COLS                                                                        \
  "id, name, lock_duration_ms, max_delivery_count, default_ttl_ms, dead_letter_on_expire, " \
  "dedup_window_ms, ordering, dlq_max_age_ms, dlq_max_count, dlq_max_bytes, max_message_bytes"
#define MQ_REF_COLS \
  "seq, state, is_head, group_key, body_size, expires_at, delivery_count, locked_until, lock_token"
#define MQ_AGE_COLS "enqueued_at, expires_at, delivery_count, is_head"
// Peek's seek of messages_state for one state (a string literal): $1 queue,
// $2 from seq, $3 limit, $4 the state asked for or NULL for all.
#define MQ_PEEK_STATE(st)                                                                  \
  "(SELECT " MQ_MSG_COLS " FROM {s}.messages WHERE queue_id = $1 AND state = " st         \
  " AND seq > $2 AND ($4::smallint IS NULL OR $4::smallint = " st ") "                     \
  "ORDER BY queue_id, state, seq LIMIT $3)"
// $1 seq, $2 state, $3 token (NULL when unlocked), $4 locked_until.
#define MQ_CAS \
  " WHERE seq = $1 AND state = $2 AND lock_token IS NOT DISTINCT FROM $3 AND locked_until = $4"

enum class Q : int {
  kXactLock,
  kXactLockMany,
  kXactTryLock,
  kSessionTryLock,
  kSessionUnlock,
  kQueueHasMessages,
  kUpdateQueue,
  kInsertQueue,
  kGetQueue,
  kListQueues,
  kDeleteQueueMessages,
  kDeleteQueueRow,
  kInsertMessage,
  kGroupHasLive,
  kPromoteNextHead,
  kClaimCandidates,
  kClaimAllOrNothing,
  kPromoteAndClaim,
  kLockMessage,
  kDeleteReturning,
  kLoadRefForUpdate,
  kLockUngrouped,
  kCasUnlock,
  kCasUnlockScheduled,
  kCasRenew,
  kCasDeadLetter,
  kCasDelete,
  kCompleteUngrouped,
  kCompleteWithReceipt,
  kPeek,
  kStats,
  kOldestDeadLocked,
  kGetGroupId,
  kRedriveInsert,
  kPromoteDue,
  kExpiredLeases,
  kExpiredTtl,
  kDlqTotals,
  kRetentionCandidates,
  kFindDedup,
  kPutDedup,
  kFindReceipt,
  kPutReceipt,
  kFindAttempt,
  kPutAttempt,
  kDropDedup,
  kDropReceipts,
  kDropAttempts,
  kCount
};

struct QueryText {
  Q id;
  const char* name;
  const char* sql;
  bool plan_each_time = false;  // unprepared: a custom plan on every run
};

inline constexpr QueryText kQueries[] = {
    {Q::kXactLock, "mq_xact_lock", "SELECT pg_advisory_xact_lock($1::bigint)"},
    // Several at once, in ascending key order, so two transactions locking
    // overlapping sets never deadlock on each other.
    {Q::kXactLockMany, "mq_xact_lock_many",
     "SELECT count(pg_advisory_xact_lock(k)) FROM "
     "(SELECT DISTINCT unnest($1::bigint[]) AS k ORDER BY 1) keys"},
    {Q::kXactTryLock, "mq_xact_try_lock", "SELECT pg_try_advisory_xact_lock($1::bigint)"},
    {Q::kSessionTryLock, "mq_session_try_lock", "SELECT pg_try_advisory_lock($1::bigint)"},
    {Q::kSessionUnlock, "mq_session_unlock", "SELECT pg_advisory_unlock($1::bigint)"},
    {Q::kQueueHasMessages, "mq_queue_has_messages",
     "SELECT 1 FROM {s}.messages WHERE queue_id = $1 ORDER BY queue_id, state, seq LIMIT 1"},
    {Q::kUpdateQueue, "mq_update_queue",
     "UPDATE {s}.queues SET lock_duration_ms = $1, max_delivery_count = $2, "
     "default_ttl_ms = $3, dead_letter_on_expire = $4, dedup_window_ms = $5, ordering = $6, "
     "dlq_max_age_ms = $7, dlq_max_count = $8, dlq_max_bytes = $9, max_message_bytes = $10 "
     "WHERE id = $11"},
    // A concurrent creator wins the name: no row comes back (no error is
    // raised, so the transaction stays usable).
    {Q::kInsertQueue, "mq_insert_queue",
     "INSERT INTO {s}.queues (lock_duration_ms, max_delivery_count, default_ttl_ms, "
     "dead_letter_on_expire, dedup_window_ms, ordering, dlq_max_age_ms, dlq_max_count, "
     "dlq_max_bytes, max_message_bytes, name, created_at) "
     "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
     "ON CONFLICT (name) DO NOTHING RETURNING id"},
    {Q::kGetQueue, "mq_get_queue", "SELECT " MQ_QUEUE_COLS " FROM {s}.queues WHERE name = $1"},
    {Q::kListQueues, "mq_list_queues", "SELECT " MQ_QUEUE_COLS " FROM {s}.queues ORDER BY name"},
    {Q::kDeleteQueueMessages, "mq_delete_queue_messages",
     "DELETE FROM {s}.messages WHERE queue_id = $1"},
    {Q::kDeleteQueueRow, "mq_delete_queue_row", "DELETE FROM {s}.queues WHERE id = $1"},
    // The queue row is held FOR KEY SHARE until the commit, so a queue
    // deleted by another engine meanwhile inserts nothing (QueueNotFound)
    // instead of leaving orphans.
    {Q::kInsertMessage, "mq_insert_message",
     "INSERT INTO {s}.messages (seq, queue_id, state, is_head, priority, group_key, "
     "enqueued_at, visible_at, expires_at, delivery_count, locked_until, lock_token, "
     "dead_lettered_at, dead_letter_reason, dead_letter_description, message_id, group_id, "
     "subject, correlation_id, content_type, properties, body, body_size) "
     "SELECT nextval('{s}.message_seq'), q.id, $2::smallint, $3::boolean, $4::smallint, "
     "$5::bytea, $6::bigint, $7::bigint, $8::bigint, 0, 0, NULL, 0, NULL, NULL, $9::bytea, "
     "$10::bytea, $11::bytea, $12::bytea, $13::bytea, $14::bytea, $15::bytea, $16::integer "
     "FROM {s}.queues q WHERE q.id = $1 FOR KEY SHARE RETURNING seq"},
    {Q::kGroupHasLive, "mq_group_has_live",
     "SELECT 1 FROM {s}.messages WHERE queue_id = $1 AND group_key = $2 "
     "AND group_key IS NOT NULL AND state <> 4 ORDER BY queue_id, group_key, seq LIMIT 1"},
    {Q::kPromoteNextHead, "mq_promote_next_head",
     "UPDATE {s}.messages SET is_head = true WHERE seq = ("
     "SELECT seq FROM {s}.messages WHERE queue_id = $1 AND group_key = $2 "
     "AND group_key IS NOT NULL AND state <> 4 ORDER BY seq LIMIT 1)"},
    // G2: selecting and locking is one step; another engine's candidates
    // are skipped, never waited for. Rows come back locked, in claim order.
    {Q::kClaimCandidates, "mq_claim_candidates",
     "SELECT " MQ_REF_COLS " FROM {s}.messages "
     "WHERE queue_id = $1 AND state = 0 AND is_head "
     "ORDER BY priority DESC, seq LIMIT $2 FOR UPDATE SKIP LOCKED"},
    // A Peek-Lock claim in one statement when it is simple (pg_store.cc
    // Claim): the first $2 candidates, locked as kClaimCandidates locks
    // them, and — only if every one would be delivered as it is (not expired
    // at $3, fewer than $4 deliveries: store_util.h WouldDeliver) — each
    // locked to its token (the $6-byte slice of $5 at its position) until
    // $7. Rows: the claimed messages (MQ_MSG_COLS, then their position) in
    // claim order, each with the candidates' count last; a single row of
    // NULLs and the count when the batch was not simple and nothing changed;
    // none when there was no candidate.
    {Q::kClaimAllOrNothing, "mq_claim_all_or_nothing",
     "WITH " MQ_CLAIM_ALL_OR_NOTHING("") " "
     "SELECT u.*, o.pos, n.cnt FROM (SELECT count(*) AS cnt FROM c) n "
     "LEFT JOIN (u JOIN o ON o.o_seq = u.seq) ON true WHERE n.cnt > 0 ORDER BY o.pos"},
    // A Receive's PrepareClaim and claim in one statement (pg_store.cc
    // Claim): kPromoteDue's promotion (at most $8 due rows, at $3) and its
    // ended-lease probe, then kClaimAllOrNothing's claim — which changes
    // nothing when the promotion changed anything or a lease has ended (the
    // claim's snapshot would not see what they make eligible; the caller
    // reclaims and claims again). Rows as kClaimAllOrNothing's, each ending
    // with the candidates' count, the rows promoted and whether a lease had
    // ended — and at least one row, all NULL but those three, when nothing
    // was claimed.
    {Q::kPromoteAndClaim, "mq_promote_and_claim",
     "WITH due AS MATERIALIZED (SELECT seq FROM {s}.messages WHERE queue_id = $1 "
     "AND state = 3 AND visible_at <= $3 ORDER BY visible_at LIMIT $8 FOR UPDATE SKIP LOCKED), "
     "up AS (UPDATE {s}.messages m SET state = 0 FROM due WHERE m.seq = due.seq RETURNING 1), "
     "p AS MATERIALIZED (SELECT (SELECT count(*) FROM up) AS promoted, COALESCE((SELECT "
     "locked_until FROM {s}.messages WHERE queue_id = $1 AND state = 1 "
     "ORDER BY queue_id, locked_until LIMIT 1) <= $3, false) AS ended), "
     MQ_CLAIM_ALL_OR_NOTHING("AND (SELECT promoted = 0 AND NOT ended FROM p) ") " "
     "SELECT u.*, o.pos, n.cnt, p.promoted, p.ended FROM (SELECT count(*) AS cnt FROM c) n "
     "CROSS JOIN p LEFT JOIN (u JOIN o ON o.o_seq = u.seq) ON true ORDER BY o.pos"},
    // $1 seq, $2 expected state (active or deferred).
    {Q::kLockMessage, "mq_lock_message",
     "UPDATE {s}.messages SET state = 1, lock_token = $3, locked_until = $4, "
     "delivery_count = delivery_count + 1 WHERE seq = $1 AND state = $2 "
     "RETURNING " MQ_MSG_COLS},
    {Q::kDeleteReturning, "mq_delete_returning",
     "DELETE FROM {s}.messages WHERE seq = $1 AND state = 0 RETURNING " MQ_MSG_COLS},
    {Q::kLoadRefForUpdate, "mq_load_ref_for_update",
     "SELECT " MQ_REF_COLS " FROM {s}.messages WHERE seq = $1 AND queue_id = $2 FOR UPDATE"},
    // The row, locked FOR UPDATE if it is ungrouped (no group lock comes
    // first), read but not locked if it is grouped; `locked` last. A group
    // key never changes, so which branch matches is stable.
    {Q::kLockUngrouped, "mq_lock_ungrouped",
     "WITH l AS (SELECT " MQ_REF_COLS " FROM {s}.messages WHERE seq = $1 AND queue_id = $2 "
     "AND group_key IS NULL FOR UPDATE) "
     "SELECT " MQ_REF_COLS ", true AS locked FROM l UNION ALL "
     "SELECT " MQ_REF_COLS ", false FROM {s}.messages WHERE seq = $1 AND queue_id = $2 "
     "AND group_key IS NOT NULL"},
    {Q::kCasUnlock, "mq_cas_unlock",
     "UPDATE {s}.messages SET state = $5, lock_token = NULL, locked_until = 0" MQ_CAS},
    {Q::kCasUnlockScheduled, "mq_cas_unlock_scheduled",
     "UPDATE {s}.messages SET state = 3, visible_at = $5, lock_token = NULL, "
     "locked_until = 0" MQ_CAS},
    {Q::kCasRenew, "mq_cas_renew", "UPDATE {s}.messages SET locked_until = $5" MQ_CAS},
    // Both report whether the row was its group's head as it changed —
    // never from an earlier read, which an earlier step of the same
    // transaction (a promotion) may have outdated.
    {Q::kCasDeadLetter, "mq_cas_dead_letter",
     "UPDATE {s}.messages m SET state = 4, is_head = false, lock_token = NULL, "
     "locked_until = 0, dead_lettered_at = $5, dead_letter_reason = $6, "
     "dead_letter_description = $7 "
     "FROM (SELECT seq, is_head FROM {s}.messages WHERE seq = $1 FOR UPDATE) old "
     "WHERE m.seq = old.seq AND m.state = $2 AND m.lock_token IS NOT DISTINCT FROM $3 "
     "AND m.locked_until = $4 RETURNING old.is_head"},
    {Q::kCasDelete, "mq_cas_delete", "DELETE FROM {s}.messages" MQ_CAS " RETURNING is_head"},
    // A Complete of an ungrouped message in one statement (PgTxn::Settle):
    // deleted if locked under the token ($3) with its lease live at $4 —
    // what DecideSettle requires of a Complete — and nothing else changes
    // (no group). No row: the settle takes the general path.
    {Q::kCompleteUngrouped, "mq_complete_ungrouped",
     "DELETE FROM {s}.messages WHERE seq = $1 AND queue_id = $2 AND group_key IS NULL "
     "AND state = 1 AND lock_token = $3 AND locked_until > $4"},
    // The same with the settle's receipt ($5 key, $6 expiry), written only
    // if the message was deleted. One row: deleted (0/1), receipts written.
    {Q::kCompleteWithReceipt, "mq_complete_with_receipt",
     "WITH d AS (DELETE FROM {s}.messages WHERE seq = $1 AND queue_id = $2 "
     "AND group_key IS NULL AND state = 1 AND lock_token = $3 AND locked_until > $4 "
     "RETURNING seq), r AS (INSERT INTO {s}.receipts (key, expires_at) "
     "SELECT $5::bytea, $6::bigint FROM d ON CONFLICT (key) "
     "DO UPDATE SET expires_at = EXCLUDED.expires_at RETURNING 1) "
     "SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM r)"},
    // Peek (one round trip): a seek of messages_state per state, merged by
    // seq; $4 = one state, or NULL for all (custom plans drop the others).
    {Q::kPeek, "mq_peek",
     "SELECT * FROM (" MQ_PEEK_STATE("0") " UNION ALL " MQ_PEEK_STATE("1") " UNION ALL "
     MQ_PEEK_STATE("2") " UNION ALL " MQ_PEEK_STATE("3") " UNION ALL " MQ_PEEK_STATE("4")
     ") p ORDER BY seq LIMIT $3"},
    // Stats (one round trip): kind 0 rows are counts per state; kinds 1–3
    // the bounded walks for the oldest claimable message (store.h Stats):
    // active heads by age, due schedules, lapsed leases ($2 now, $3 cap).
    {Q::kStats, "mq_stats",
     "SELECT 0 AS kind, state, count(*), coalesce(sum(body_size), 0)::bigint, NULL::bigint, "
     "NULL::bigint, NULL::integer, NULL::boolean FROM {s}.messages WHERE queue_id = $1 "
     "GROUP BY state "
     "UNION ALL (SELECT 1, NULL, NULL, NULL, enqueued_at, expires_at, delivery_count, is_head "
     "FROM {s}.messages WHERE queue_id = $1 AND state = 0 AND is_head "
     "ORDER BY queue_id, enqueued_at LIMIT $3) "
     "UNION ALL (SELECT 2, NULL, NULL, NULL, enqueued_at, expires_at, delivery_count, is_head "
     "FROM {s}.messages WHERE queue_id = $1 AND state = 3 AND visible_at <= $2 "
     "ORDER BY queue_id, visible_at LIMIT $3) "
     "UNION ALL (SELECT 3, NULL, NULL, NULL, enqueued_at, expires_at, delivery_count, is_head "
     "FROM {s}.messages WHERE queue_id = $1 AND state = 1 AND locked_until <= $2 "
     "ORDER BY queue_id, locked_until LIMIT $3)"},
    // Redrive and purge: the dead letters this call moves, locked so two
    // engines never both move one (LIMIT NULL = no limit).
    {Q::kOldestDeadLocked, "mq_oldest_dead_locked",
     "SELECT " MQ_REF_COLS " FROM {s}.messages WHERE queue_id = $1 AND state = 4 "
     "AND dead_lettered_at <= $2 ORDER BY dead_lettered_at, seq LIMIT $3 "
     "FOR UPDATE SKIP LOCKED"},
    {Q::kGetGroupId, "mq_get_group_id", "SELECT group_id FROM {s}.messages WHERE seq = $1"},
    {Q::kRedriveInsert, "mq_redrive_insert",
     "INSERT INTO {s}.messages (seq, queue_id, state, is_head, priority, group_key, "
     "enqueued_at, visible_at, expires_at, delivery_count, locked_until, lock_token, "
     "dead_lettered_at, dead_letter_reason, dead_letter_description, message_id, group_id, "
     "subject, correlation_id, content_type, properties, body, body_size) "
     "SELECT nextval('{s}.message_seq'), $1::bigint, 0, $2::boolean, priority, $3::bytea, "
     "enqueued_at, $4::bigint, $5::bigint, 0, 0, "
     "NULL, 0, NULL, NULL, message_id, group_id, subject, correlation_id, content_type, "
     "properties, body, body_size FROM {s}.messages WHERE seq = $6::bigint AND state = 4"},
    // Scheduled → active changes no group's membership; rows another
    // transaction holds are left for the next pass.
    // Also says whether any lease of the queue has ended by $2 (the
    // earliest lease end, one seek of messages_lease), so that the
    // ReclaimLocks which follows in a Receive skips its read when none has
    // (pg_store.cc).
    {Q::kPromoteDue, "mq_promote_due",
     "WITH due AS MATERIALIZED (SELECT seq FROM {s}.messages WHERE queue_id = $1 "
     "AND state = 3 AND visible_at <= $2 ORDER BY visible_at LIMIT $3 FOR UPDATE SKIP LOCKED), "
     "up AS (UPDATE {s}.messages m SET state = 0 FROM due WHERE m.seq = due.seq RETURNING 1) "
     "SELECT (SELECT count(*) FROM up), COALESCE((SELECT locked_until FROM {s}.messages "
     "WHERE queue_id = $1 AND state = 1 ORDER BY queue_id, locked_until LIMIT 1) <= $2, false)"},
    // Maintenance never waits on a row: it locks what it will change up
    // front and skips rows another transaction holds (a settle, a claim,
    // another engine's pass) — waiting, in an order that differs between
    // transactions, is how deadlocks start.
    {Q::kExpiredLeases, "mq_expired_leases",
     "SELECT " MQ_REF_COLS " FROM {s}.messages WHERE queue_id = $1 AND state = 1 "
     "AND locked_until <= $2 ORDER BY locked_until LIMIT $3 FOR UPDATE SKIP LOCKED"},
    {Q::kExpiredTtl, "mq_expired_ttl",
     "SELECT " MQ_REF_COLS " FROM {s}.messages WHERE queue_id = $1 AND expires_at > 0 "
     "AND state IN (0, 2, 3) AND expires_at <= $2 ORDER BY expires_at LIMIT $3 "
     "FOR UPDATE SKIP LOCKED"},
    {Q::kDlqTotals, "mq_dlq_totals",
     "SELECT count(*), coalesce(sum(body_size), 0) FROM {s}.messages "
     "WHERE queue_id = $1 AND state = 4"},
    {Q::kRetentionCandidates, "mq_retention_candidates",
     "SELECT " MQ_REF_COLS ", dead_lettered_at FROM {s}.messages WHERE queue_id = $1 "
     "AND state = 4 ORDER BY dead_lettered_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED"},
    {Q::kFindDedup, "mq_find_dedup",
     "SELECT seq, body_hash, expires_at FROM {s}.dedup "
     "WHERE queue_id = $1 AND key = $2 AND expires_at > $3"},
    {Q::kPutDedup, "mq_put_dedup",
     "INSERT INTO {s}.dedup (queue_id, key, seq, body_hash, expires_at) "
     "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (queue_id, key) DO UPDATE SET "
     "seq = EXCLUDED.seq, body_hash = EXCLUDED.body_hash, expires_at = EXCLUDED.expires_at"},
    {Q::kFindReceipt, "mq_find_receipt",
     "SELECT 1 FROM {s}.receipts WHERE key = $1 AND expires_at > $2"},
    {Q::kPutReceipt, "mq_put_receipt",
     "INSERT INTO {s}.receipts (key, expires_at) VALUES ($1, $2) "
     "ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at"},
    {Q::kFindAttempt, "mq_find_attempt",
     "SELECT queue_id, mode, payload, expires_at FROM {s}.attempts "
     "WHERE attempt_id = $1 AND expires_at > $2"},
    {Q::kPutAttempt, "mq_put_attempt",
     "INSERT INTO {s}.attempts (attempt_id, queue_id, mode, payload, expires_at) "
     "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (attempt_id) DO UPDATE SET "
     "queue_id = EXCLUDED.queue_id, mode = EXCLUDED.mode, payload = EXCLUDED.payload, "
     "expires_at = EXCLUDED.expires_at"},
    {Q::kDropDedup, "mq_drop_dedup",
     "WITH gone AS MATERIALIZED (SELECT queue_id, key FROM {s}.dedup WHERE expires_at <= $1 "
     "ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
     "DELETE FROM {s}.dedup d USING gone WHERE d.queue_id = gone.queue_id AND d.key = gone.key", true},
    {Q::kDropReceipts, "mq_drop_receipts",
     "WITH gone AS MATERIALIZED (SELECT key FROM {s}.receipts WHERE expires_at <= $1 "
     "ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
     "DELETE FROM {s}.receipts r USING gone WHERE r.key = gone.key", true},
    {Q::kDropAttempts, "mq_drop_attempts",
     "WITH gone AS MATERIALIZED (SELECT attempt_id FROM {s}.attempts WHERE expires_at <= $1 "
     "ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
     "DELETE FROM {s}.attempts a USING gone WHERE a.attempt_id = gone.attempt_id", true},
};

static_assert(std::size(kQueries) == static_cast<size_t>(Q::kCount));

// The statements with the schema filled in, for one store.
class PgQueries {
 public:
  explicit PgQueries(std::string_view schema) {
    for (const QueryText& q : kQueries) {
      sql_[static_cast<size_t>(q.id)] = FillSchema(q.sql, schema);
    }
    for (const QueryText& q : kQueries) {
      st_[static_cast<size_t>(q.id)] =
          Statement{q.name, sql_[static_cast<size_t>(q.id)].c_str(), q.plan_each_time};
    }
  }
  PgQueries(const PgQueries&) = delete;
  PgQueries& operator=(const PgQueries&) = delete;

  const Statement& operator[](Q q) const { return st_[static_cast<size_t>(q)]; }

 private:
  std::array<std::string, static_cast<size_t>(Q::kCount)> sql_;
  std::array<Statement, static_cast<size_t>(Q::kCount)> st_{};
};

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_SRC_QUERIES_H_
