// Every SQL statement the SQLite store runs, named, in one place: the store
// prepares these (its statement cache is keyed by address) and the plan-pin
// test (tests/plan_pin_test.cc) EXPLAINs exactly these texts. SPEC §11.
#ifndef MQLITE_STORES_SQLITE_SRC_QUERIES_H_
#define MQLITE_STORES_SQLITE_SRC_QUERIES_H_

#include <array>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>

namespace mqlite::internal {

// Column lists shared by the statements that return them (decoded by
// ReadMessage / ReadQueue / ReadRef in sqlite_store.cc).
#define MQ_MSG_COLS                                                                           \
  "seq, state, priority, enqueued_at, visible_at, expires_at, delivery_count, locked_until, " \
  "lock_token, dead_lettered_at, dead_letter_reason, dead_letter_description, message_id, "  \
  "group_id, subject, correlation_id, content_type, properties, body"

#define MQ_QUEUE_COLS                                                                         \
  "id, name, lock_duration_ms, max_delivery_count, default_ttl_ms, dead_letter_on_expire, "  \
  "dedup_window_ms, ordering, dlq_max_age_ms, dlq_max_count, dlq_max_bytes, max_message_bytes"

#define MQ_REF_COLS \
  "seq, state, is_head, group_key, length(body), expires_at, delivery_count, locked_until, lock_token"

// A message is addressed by its key (queue_id, klass, seq) and its state:
// MQ_AT(queue, state, seq) takes three parameter numbers and derives the
// klass from the state (schema.h: active and locked share klass 0). Every
// statement that writes state writes MQ_KLASS_OF it too.
#define MQ_KLASS_OF(state) "(CASE WHEN " state " = 1 THEN 0 ELSE " state " END)"
#define MQ_AT(queue, state, seq)                                                        \
  "queue_id = " queue " AND klass = " MQ_KLASS_OF(state) " AND state = " state " AND " \
  "seq = " seq
#define MQ_LOCKED(queue, seq) "queue_id = " queue " AND klass = 0 AND state = 1 AND seq = " seq

inline constexpr char kQueueHasMessages[] =
    "SELECT 1 FROM mqlite_messages WHERE queue_id = ? LIMIT 1";
inline constexpr char kUpdateQueue[] =
    "UPDATE mqlite_queues SET lock_duration_ms = ?, max_delivery_count = ?, "
    "default_ttl_ms = ?, dead_letter_on_expire = ?, dedup_window_ms = ?, ordering = ?, "
    "dlq_max_age_ms = ?, dlq_max_count = ?, dlq_max_bytes = ?, max_message_bytes = ? "
    "WHERE id = ?";
inline constexpr char kInsertQueue[] =
    "INSERT INTO mqlite_queues (name, lock_duration_ms, max_delivery_count, "
    "default_ttl_ms, dead_letter_on_expire, dedup_window_ms, ordering, dlq_max_age_ms, "
    "dlq_max_count, dlq_max_bytes, max_message_bytes, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
inline constexpr char kGetQueue[] =
    "SELECT " MQ_QUEUE_COLS " FROM mqlite_queues WHERE name = ?";
inline constexpr char kListQueues[] =
    "SELECT " MQ_QUEUE_COLS " FROM mqlite_queues ORDER BY name";
inline constexpr char kDeleteQueueMessages[] =
    "DELETE FROM mqlite_messages WHERE queue_id = ?";
inline constexpr char kDeleteQueueRow[] =
    "DELETE FROM mqlite_queues WHERE id = ?";
// Binds queue_id, state (active or scheduled), seq, is_head, priority,
// group_key, enqueued_at, visible_at, expires_at, then the payload.
inline constexpr char kInsertMessage[] =
    "INSERT INTO mqlite_messages (queue_id, klass, state, seq, is_head, priority, group_key, "
    "enqueued_at, visible_at, expires_at, delivery_count, locked_until, lock_token, "
    "dead_lettered_at, dead_letter_reason, dead_letter_description, redriven, message_id, "
    "group_id, subject, correlation_id, content_type, properties, body) "
    "VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, 0, NULL, 0, NULL, NULL, 0, ?10, ?11, ?12, "
    "?13, ?14, ?15, ?16)";
// Multi-row statements: a SendBatch inserts, and a Claim locks, its rows in
// chunks of 64, 32, … 1 rows (ChunkRows), one statement a chunk, so the
// statement's fixed cost (a cursor on every index, halt, reset) is paid per
// chunk rather than per message. Each text is built once (ChunkTexts), so its
// address keys the statement cache like the literals'.
inline constexpr size_t kChunkRowsMax = 64;
// The rows of the next chunk: the largest power of two ≤ left, ≤ kChunkRowsMax.
inline size_t ChunkRows(size_t left) {
  size_t n = 1;
  while (n * 2 <= left && n * 2 <= kChunkRowsMax) n *= 2;
  return n;
}
// build(rows) for rows = 1, 2, 4, … kChunkRowsMax; ChunkText picks one.
template <class Build>
std::array<std::string, 7> ChunkTexts(Build build) {
  std::array<std::string, 7> out;
  for (size_t k = 0; k < out.size(); ++k) out[k] = build(size_t{1} << k);
  return out;
}
inline const char* ChunkText(const std::array<std::string, 7>& texts, size_t rows) {
  size_t k = 0;
  while ((size_t{1} << k) < rows) ++k;
  return texts[k].c_str();
}
// kInsertMessage with `rows` value tuples, each row's parameters numbered
// after the previous row's (bind row by row, left to right).
inline const char* InsertMessagesSql(size_t rows) {
  static const std::array<std::string, 7> texts = ChunkTexts([](size_t n) {
    const std::string_view base(kInsertMessage);
    const size_t values = base.find("VALUES ") + 7;
    const std::string_view tuple = base.substr(values);
    // Calls f(text before, N) for each ?N of the tuple; returns the rest.
    auto each_param = [&](auto&& f) {
      size_t from = 0;
      for (size_t i = 0; i < tuple.size(); ++i) {
        if (tuple[i] != '?') continue;
        f(tuple.substr(from, i - from), std::atoi(tuple.data() + i + 1));
        while (i + 1 < tuple.size() && tuple[i + 1] >= '0' && tuple[i + 1] <= '9') ++i;
        from = i + 1;
      }
      return tuple.substr(from);
    };
    int per_row = 0;
    each_param([&](std::string_view, int p) { per_row = p > per_row ? p : per_row; });
    std::string sql(base.substr(0, values));
    for (size_t r = 0; r < n; ++r) {
      if (r > 0) sql += ", ";
      sql += each_param([&](std::string_view text, int p) {
        sql += text;
        sql += '?' + std::to_string(p + static_cast<int>(r) * per_row);
      });
    }
    return sql;
  });
  return rows <= 1 ? kInsertMessage : ChunkText(texts, rows);
}
// No statement on the hot paths uses RETURNING: on SQLite 3.40 it costs more
// than the write it reports on (measured: +45k instructions on a DELETE of
// one row). The claim reads whole rows and the store applies the change to
// its copy; settles read the row they change first.
// Claim candidates, whole: the message, then is_head, group_key, body size.
inline constexpr char kClaimCandidates[] =
    "SELECT " MQ_MSG_COLS ", is_head, group_key, length(body) FROM mqlite_messages "
    "INDEXED BY mqlite_msg_claim WHERE queue_id = ? AND state = 0 AND is_head = 1 "
    "ORDER BY priority DESC, seq LIMIT ?";
// Locks an active row where it is (Claim). A statement that names the key
// column klass in SET takes SQLite's slower key-changing path even when the
// value stays (measured: 37k instead of 29k instructions a claimed message),
// so the in-place transitions leave klass out.
inline constexpr char kLockActive[] =
    "UPDATE mqlite_messages SET state = 1, lock_token = ?1, locked_until = ?2, "
    "delivery_count = delivery_count + 1 WHERE queue_id = ?3 AND klass = 0 AND state = 0 "
    "AND seq = ?4";
// kLockActive for `rows` rows: binds seq and token of each row, then
// locked_until and queue_id. Every row gets its own token (CASE on seq).
inline const char* LockActivesSql(size_t rows) {
  static const std::array<std::string, 7> texts = ChunkTexts([](size_t n) {
    std::string tokens, seqs;
    for (size_t r = 0; r < n; ++r) {
      const std::string seq = "?" + std::to_string(2 * r + 1);
      tokens += " WHEN " + seq + " THEN ?" + std::to_string(2 * r + 2);
      seqs += (r > 0 ? ", " : "") + seq;
    }
    return "UPDATE mqlite_messages SET state = 1, lock_token = CASE seq" + tokens +
           " END, locked_until = ?" + std::to_string(2 * n + 1) +
           ", delivery_count = delivery_count + 1 WHERE queue_id = ?" +
           std::to_string(2 * n + 2) + " AND klass = 0 AND state = 0 AND seq IN (" + seqs + ")";
  });
  return ChunkText(texts, rows);
}
// Locks a deferred row (ClaimDeferred): it moves to klass 0.
inline constexpr char kLockDeferred[] =
    "UPDATE mqlite_messages SET state = 1, klass = 0, lock_token = ?1, locked_until = ?2, "
    "delivery_count = delivery_count + 1 WHERE queue_id = ?3 AND klass = 2 AND state = 2 "
    "AND seq = ?4";
// A whole message of known state.
inline constexpr char kLoadMessage[] =
    "SELECT " MQ_MSG_COLS " FROM mqlite_messages WHERE " MQ_AT("?1", "?2", "?3");
inline constexpr char kAbandonDelayed[] =
    "UPDATE mqlite_messages SET state = 3, klass = 3, visible_at = ?1, lock_token = NULL, "
    "locked_until = 0 WHERE " MQ_LOCKED("?2", "?3");
inline constexpr char kRenew[] =
    "UPDATE mqlite_messages SET locked_until = ?1 WHERE " MQ_LOCKED("?2", "?3");
// Peek: a klass in seq order, optionally one state of it (?4 < 0: any). The
// active messages skip the locked ones among them: those are bounded by the
// leases in flight, not by the backlog.
inline constexpr char kPeekKlass[] =
    "SELECT " MQ_MSG_COLS " FROM mqlite_messages WHERE queue_id = ?1 AND klass = ?2 "
    "AND seq > ?3 AND (?4 < 0 OR state = ?4) ORDER BY seq LIMIT ?5";
// The locked messages in seq order come from the lease index and are sorted:
// O(leases in flight in the queue), never O(backlog) (walking klass 0 would
// visit every active message).
inline constexpr char kPeekLocked[] =
    "SELECT " MQ_MSG_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ? AND state = 1 AND seq > ? ORDER BY seq LIMIT ?";
// Per klass: how many are locked (klass 0 only), how many in all, bytes.
inline constexpr char kStatsCounts[] =
    "SELECT klass, sum(state = 1), count(*), sum(length(body)) FROM mqlite_messages "
    "WHERE queue_id = ? GROUP BY klass";
// Stats' oldest claimable message (StoreTxn::Stats): bounded walks of the
// active heads of one priority in seq order, of the redriven active heads by
// age, of due schedules and of lapsed leases.
#define MQ_AGE_COLS "enqueued_at, expires_at, delivery_count, is_head"
inline constexpr char kOldestHeadsOfPriority[] =
    "SELECT " MQ_AGE_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_claim "
    "WHERE queue_id = ? AND priority = ? AND state = 0 AND is_head = 1 ORDER BY seq LIMIT ?";
inline constexpr char kOldestRedrivenHeads[] =
    "SELECT " MQ_AGE_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_redriven "
    "WHERE queue_id = ? AND state = 0 AND is_head = 1 AND redriven = 1 "
    "ORDER BY enqueued_at LIMIT ?";
inline constexpr char kDueScheduled[] =
    "SELECT " MQ_AGE_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ? AND state = 3 AND due_at <= ? ORDER BY due_at LIMIT ?";
inline constexpr char kLapsedLeases[] =
    "SELECT " MQ_AGE_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ? AND state = 1 AND due_at <= ? ORDER BY due_at LIMIT ?";
inline constexpr char kGetGroupId[] =
    "SELECT group_id FROM mqlite_messages WHERE queue_id = ?1 AND klass = 4 AND state = 4 "
    "AND seq = ?2";
inline constexpr char kRedriveInsert[] =
    "INSERT INTO mqlite_messages (queue_id, klass, state, seq, is_head, priority, group_key, "
    "enqueued_at, visible_at, expires_at, delivery_count, locked_until, lock_token, "
    "dead_lettered_at, dead_letter_reason, dead_letter_description, redriven, message_id, "
    "group_id, subject, correlation_id, content_type, properties, body) "
    "SELECT ?1, 0, 0, ?2, ?3, priority, ?4, enqueued_at, ?5, ?6, 0, 0, NULL, 0, NULL, NULL, 1, "
    "message_id, group_id, subject, correlation_id, content_type, properties, body "
    "FROM mqlite_messages WHERE queue_id = ?7 AND klass = 4 AND state = 4 AND seq = ?8";
// PromoteDue: a cheap probe first (an UPDATE opens every index even when it
// changes nothing), then the promotion of up to `limit` due rows.
inline constexpr char kAnyDue[] =
    "SELECT 1 FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ? AND state = 3 AND due_at <= ? LIMIT 1";
inline constexpr char kPromoteDue[] =
    "UPDATE mqlite_messages SET state = 0, klass = 0 WHERE queue_id = ?1 AND klass = 3 AND seq IN ("
    "SELECT seq FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ?1 AND state = 3 AND due_at <= ?2 ORDER BY due_at LIMIT ?3)";
inline constexpr char kExpiredLeases[] =
    "SELECT " MQ_REF_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ? AND state = 1 AND due_at <= ? ORDER BY due_at LIMIT ?";
inline constexpr char kExpiredTtl[] =
    "SELECT " MQ_REF_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_ttl "
    "WHERE queue_id = ? AND expires_at > 0 AND state IN (0, 2, 3) "
    "AND expires_at <= ? ORDER BY expires_at LIMIT ?";
inline constexpr char kDlqTotals[] =
    "SELECT dlq_count, dlq_bytes FROM mqlite_queues WHERE id = ?";
inline constexpr char kRetentionCandidates[] =
    "SELECT " MQ_REF_COLS ", dead_lettered_at FROM mqlite_messages "
    "INDEXED BY mqlite_msg_time WHERE queue_id = ? AND state = 4 "
    "ORDER BY due_at, seq LIMIT ?";
inline constexpr char kFindDedup[] =
    "SELECT seq, body_hash, expires_at FROM mqlite_dedup "
    "WHERE queue_id = ? AND key = ? AND expires_at > ?";
inline constexpr char kPutDedup[] =
    "INSERT OR REPLACE INTO mqlite_dedup (queue_id, key, seq, body_hash, expires_at) "
    "VALUES (?, ?, ?, ?, ?)";
inline constexpr char kFindReceipt[] =
    "SELECT 1 FROM mqlite_receipts WHERE key = ? AND expires_at > ?";
inline constexpr char kPutReceipt[] =
    "INSERT OR REPLACE INTO mqlite_receipts (key, expires_at) VALUES (?, ?)";
// kPutReceipt for `rows` receipts: key and expires_at of each.
inline const char* PutReceiptsSql(size_t rows) {
  static const std::array<std::string, 7> texts = ChunkTexts([](size_t n) {
    std::string sql = "INSERT OR REPLACE INTO mqlite_receipts (key, expires_at) VALUES ";
    for (size_t r = 0; r < n; ++r) {
      sql += (r > 0 ? ", (?" : "(?") + std::to_string(2 * r + 1) + ", ?" +
             std::to_string(2 * r + 2) + ")";
    }
    return sql;
  });
  return rows <= 1 ? kPutReceipt : ChunkText(texts, rows);
}
inline constexpr char kFindAttempt[] =
    "SELECT queue_id, mode, payload, expires_at FROM mqlite_attempts "
    "WHERE attempt_id = ? AND expires_at > ?";
inline constexpr char kPutAttempt[] =
    "INSERT OR REPLACE INTO mqlite_attempts (attempt_id, queue_id, mode, payload, "
    "expires_at) VALUES (?, ?, ?, ?, ?)";
inline constexpr char kExpiredDedup[] =
    "SELECT queue_id, key FROM mqlite_dedup INDEXED BY mqlite_dedup_expiry "
    "WHERE expires_at <= ? ORDER BY expires_at LIMIT ?";
inline constexpr char kDeleteDedup[] =
    "DELETE FROM mqlite_dedup WHERE queue_id = ? AND key = ?";
// Receipts have no expiry index (a Complete would write its pages): the
// sweep walks them in key order from where the last one stopped (SqliteTxn::
// SweepReceipts), then deletes the expired ones it met by key.
inline constexpr char kSweepReceipts[] =
    "SELECT key, expires_at FROM mqlite_receipts WHERE key > ? ORDER BY key LIMIT ?";
inline constexpr char kDeleteReceipt[] = "DELETE FROM mqlite_receipts WHERE key = ?";
inline constexpr char kDropAttempts[] =
    "DELETE FROM mqlite_attempts WHERE attempt_id IN (SELECT attempt_id FROM "
    "mqlite_attempts INDEXED BY mqlite_attempts_expiry WHERE expires_at <= ? "
    "ORDER BY expires_at LIMIT ?)";
// The row of a given state (settle: locked; cancel: scheduled; ...).
inline constexpr char kLoadRef[] =
    "SELECT " MQ_REF_COLS " FROM mqlite_messages WHERE " MQ_AT("?1", "?2", "?3");
// The row in whatever state it is (operator paths): one seek per klass.
inline constexpr char kLoadAnyRef[] =
    "SELECT " MQ_REF_COLS " FROM mqlite_messages "
    "WHERE queue_id = ?1 AND klass IN (0, 2, 3, 4) AND seq = ?2";
inline constexpr char kGroupHasLive[] =
    "SELECT 1 FROM mqlite_messages INDEXED BY mqlite_msg_group "
    "WHERE queue_id = ? AND group_key = ? AND group_key IS NOT NULL AND state <> 4 "
    "LIMIT 1";
// The lowest-seq live member of a group (its next head), then its promotion.
inline constexpr char kNextHead[] =
    "SELECT state, seq FROM mqlite_messages INDEXED BY mqlite_msg_group "
    "WHERE queue_id = ? AND group_key = ? AND group_key IS NOT NULL AND state <> 4 "
    "ORDER BY seq LIMIT 1";
inline constexpr char kSetHead[] =
    "UPDATE mqlite_messages SET is_head = 1 WHERE " MQ_AT("?1", "?2", "?3");
// locked → active, where it is.
inline constexpr char kUnlockToActive[] =
    "UPDATE mqlite_messages SET state = 0, lock_token = NULL, locked_until = 0 "
    "WHERE " MQ_LOCKED("?1", "?2");
// locked → deferred: it moves to klass 2.
inline constexpr char kUnlockToDeferred[] =
    "UPDATE mqlite_messages SET state = 2, klass = 2, lock_token = NULL, locked_until = 0 "
    "WHERE " MQ_LOCKED("?1", "?2");
inline constexpr char kDeleteMessage[] =
    "DELETE FROM mqlite_messages WHERE " MQ_AT("?1", "?2", "?3");
// The common Complete in one statement (Settle): the row is deleted if it is
// locked under the token (?3) with its lease live at ?4 — what DecideSettle
// requires of a Complete — and nothing else has to change (no group, so no
// next head). No change: the settle takes the general path.
inline constexpr char kCompleteUngrouped[] =
    "DELETE FROM mqlite_messages WHERE " MQ_LOCKED("?1", "?2") " AND lock_token = ?3 "
    "AND locked_until > ?4 AND group_key IS NULL";
// Whether the row is its group's head now (not as read earlier).
inline constexpr char kIsHead[] =
    "SELECT is_head FROM mqlite_messages WHERE " MQ_AT("?1", "?2", "?3");
inline constexpr char kDlqDecrement[] =
    "UPDATE mqlite_queues SET dlq_count = dlq_count - 1, "
    "dlq_bytes = dlq_bytes - ? WHERE id = ?";
// Dead-letters a live row of the bound state; kClearHead runs first and
// reports whether it was its group's head.
inline constexpr char kDeadLetter[] =
    "UPDATE mqlite_messages SET state = 4, klass = 4, lock_token = NULL, "
    "locked_until = 0, dead_lettered_at = ?1, dead_letter_reason = ?2, "
    "dead_letter_description = ?3 WHERE " MQ_AT("?4", "?5", "?6");
// Clears headship and reports (through changes()) whether the row had it.
inline constexpr char kClearHead[] =
    "UPDATE mqlite_messages SET is_head = 0 "
    "WHERE " MQ_AT("?1", "?2", "?3") " AND is_head = 1";
inline constexpr char kDlqIncrement[] =
    "UPDATE mqlite_queues SET dlq_count = dlq_count + 1, "
    "dlq_bytes = dlq_bytes + ? WHERE id = ?";
inline constexpr char kOldestDead[] =
    "SELECT " MQ_REF_COLS " FROM mqlite_messages INDEXED BY mqlite_msg_time "
    "WHERE queue_id = ? AND state = 4 AND due_at <= ? "
    "ORDER BY due_at, seq LIMIT ?";
inline constexpr char kFreelistCount[] =
    "PRAGMA freelist_count";
inline constexpr char kHasMetaTable[] =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mqlite_meta'";
inline constexpr char kSchemaToken[] =
    "SELECT value FROM mqlite_meta WHERE key = 'schema_version'";
inline constexpr char kInsertSchemaToken[] =
    "INSERT INTO mqlite_meta (key, value) VALUES ('schema_version', ?)";
// The seq high-water mark (schema.h): every seq ≤ it may have been handed out.
inline constexpr char kSeqReserved[] =
    "SELECT value FROM mqlite_meta WHERE key = 'seq_reserved'";
inline constexpr char kReserveSeqs[] =
    "INSERT OR REPLACE INTO mqlite_meta (key, value) VALUES ('seq_reserved', ?)";

// Every statement above, for the plan-pin test: a statement missing from its
// expectation table fails the test, so no query ships unpinned.
struct NamedQuery {
  const char* name;
  const char* sql;
};
inline const NamedQuery kAllQueries[] = {
    {"kQueueHasMessages", kQueueHasMessages},
    {"kUpdateQueue", kUpdateQueue},
    {"kInsertQueue", kInsertQueue},
    {"kGetQueue", kGetQueue},
    {"kListQueues", kListQueues},
    {"kDeleteQueueMessages", kDeleteQueueMessages},
    {"kDeleteQueueRow", kDeleteQueueRow},
    {"kInsertMessage", kInsertMessage},
    {"kInsertMessages", InsertMessagesSql(kChunkRowsMax)},
    {"kClaimCandidates", kClaimCandidates},
    {"kLockActive", kLockActive},
    {"kLockActives", LockActivesSql(kChunkRowsMax)},
    {"kLockDeferred", kLockDeferred},
    {"kLoadMessage", kLoadMessage},
    {"kAbandonDelayed", kAbandonDelayed},
    {"kRenew", kRenew},
    {"kPeekKlass", kPeekKlass},
    {"kPeekLocked", kPeekLocked},
    {"kStatsCounts", kStatsCounts},
    {"kOldestHeadsOfPriority", kOldestHeadsOfPriority},
    {"kOldestRedrivenHeads", kOldestRedrivenHeads},
    {"kDueScheduled", kDueScheduled},
    {"kLapsedLeases", kLapsedLeases},
    {"kGetGroupId", kGetGroupId},
    {"kRedriveInsert", kRedriveInsert},
    {"kAnyDue", kAnyDue},
    {"kPromoteDue", kPromoteDue},
    {"kExpiredLeases", kExpiredLeases},
    {"kExpiredTtl", kExpiredTtl},
    {"kDlqTotals", kDlqTotals},
    {"kRetentionCandidates", kRetentionCandidates},
    {"kFindDedup", kFindDedup},
    {"kPutDedup", kPutDedup},
    {"kFindReceipt", kFindReceipt},
    {"kPutReceipt", kPutReceipt},
    {"kPutReceipts", PutReceiptsSql(kChunkRowsMax)},
    {"kFindAttempt", kFindAttempt},
    {"kPutAttempt", kPutAttempt},
    {"kExpiredDedup", kExpiredDedup},
    {"kDeleteDedup", kDeleteDedup},
    {"kSweepReceipts", kSweepReceipts},
    {"kDeleteReceipt", kDeleteReceipt},
    {"kDropAttempts", kDropAttempts},
    {"kLoadRef", kLoadRef},
    {"kLoadAnyRef", kLoadAnyRef},
    {"kGroupHasLive", kGroupHasLive},
    {"kNextHead", kNextHead},
    {"kSetHead", kSetHead},
    {"kUnlockToActive", kUnlockToActive},
    {"kUnlockToDeferred", kUnlockToDeferred},
    {"kDeleteMessage", kDeleteMessage},
    {"kCompleteUngrouped", kCompleteUngrouped},
    {"kIsHead", kIsHead},
    {"kDlqDecrement", kDlqDecrement},
    {"kDeadLetter", kDeadLetter},
    {"kClearHead", kClearHead},
    {"kDlqIncrement", kDlqIncrement},
    {"kOldestDead", kOldestDead},
    {"kFreelistCount", kFreelistCount},
    {"kHasMetaTable", kHasMetaTable},
    {"kSchemaToken", kSchemaToken},
    {"kInsertSchemaToken", kInsertSchemaToken},
    {"kSeqReserved", kSeqReserved},
    {"kReserveSeqs", kReserveSeqs},
};

}  // namespace mqlite::internal

#endif  // MQLITE_STORES_SQLITE_SRC_QUERIES_H_
