// The canonical SQLite layout (SPEC §10). Changing any statement here requires
// a new kSqliteSchemaToken: files written with another token are refused.
//
// Design (docs/sqlite-store.md):
// - One row per message in a table clustered (WITHOUT ROWID) by
//   (queue_id, klass, seq), klass being the state except that active and
//   locked share klass 0. The key is the per-state index Peek, Stats and
//   queue deletion need, so no separate state index is written on every send
//   and every state change, and the hot transitions — claim (active →
//   locked), abandon (back), renew — update the row where it is; only the
//   rarer ones (defer, schedule, dead-letter, promotion of a due schedule)
//   move it to another klass. klass is derived from state by every statement
//   that writes state (MQ_KLASS_OF).
// - seq is assigned by the store from a counter whose high-water mark is
//   reserved in blocks in mqlite_meta ('seq_reserved'), so it is never
//   reused — even after the newest row is deleted and the file reopened —
//   without AUTOINCREMENT's write of sqlite_sequence on every send.
// - Group order without probing: `is_head` is 1 for an ungrouped message and
//   for the lowest-seq live (not dead-lettered) member of each group. The
//   claim index holds only active heads, so blocked group members are never
//   visited; when a head leaves its group (deleted or dead-lettered) the next
//   member is promoted with one seek of mqlite_msg_group.
// - One index over the time-driven states (locked by lease end, scheduled by
//   due time, dead-lettered by dead-letter time), keyed through the generated
//   column due_at; every claim, settle and maintenance query seeks the key,
//   the claim, group, time or TTL index.
// - Stats' oldest claimable active head: active heads of one priority come
//   in seq order, which is enqueued_at order for every message but a
//   redriven one (it keeps its enqueued_at under a new seq): those carry
//   redriven = 1 and have an index of their own.
// - Text fields are BLOBs so NUL bytes round-trip; NULL = absent. A body's
//   size is length(body), which SQLite reads from the record header.
#ifndef MQLITE_STORES_SQLITE_SRC_SCHEMA_H_
#define MQLITE_STORES_SQLITE_SRC_SCHEMA_H_

#include <cstdint>

#include "mqlite/types.h"

namespace mqlite::internal {

// SPEC §10 mapping (docs/sqlite-store.md): the `PRAGMA synchronous` level an
// open sets. In WAL mode NORMAL syncs at checkpoints only, FULL at every
// commit, OFF never (process death only). The bench's raw-SQL floor uses it
// too.
inline const char* SynchronousLevel(Durability d) {
  switch (d) {
    case Durability::kFull: return "FULL";
    case Durability::kProcessOnly: return "OFF";
    case Durability::kNormal: break;
  }
  return "NORMAL";
}

// How many seqs one write of mqlite_meta's 'seq_reserved' hands out.
inline constexpr int64_t kSeqReserveBlock = 1024;

// The klass of a state (schema.h's design): active and locked share 0.
inline constexpr int KlassOf(MessageState state) {
  return state == MessageState::kLocked ? 0 : static_cast<int>(state);
}

inline constexpr const char* kSqliteSchema[] = {
    "CREATE TABLE mqlite_meta (\n"
    "  key   TEXT PRIMARY KEY,\n"
    "  value TEXT NOT NULL\n"
    ") STRICT, WITHOUT ROWID",

    "CREATE TABLE mqlite_queues (\n"
    "  id                    INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  name                  TEXT NOT NULL UNIQUE,\n"
    "  lock_duration_ms      INTEGER NOT NULL,\n"
    "  max_delivery_count    INTEGER NOT NULL,\n"
    "  default_ttl_ms        INTEGER NOT NULL,\n"
    "  dead_letter_on_expire INTEGER NOT NULL,\n"
    "  dedup_window_ms       INTEGER NOT NULL,\n"
    "  ordering              INTEGER NOT NULL,\n"
    "  dlq_max_age_ms        INTEGER NOT NULL,\n"
    "  dlq_max_count         INTEGER NOT NULL,\n"
    "  dlq_max_bytes         INTEGER NOT NULL,\n"
    "  max_message_bytes     INTEGER NOT NULL,\n"
    "  dlq_count             INTEGER NOT NULL DEFAULT 0,\n"
    "  dlq_bytes             INTEGER NOT NULL DEFAULT 0,\n"
    "  created_at            INTEGER NOT NULL\n"
    ") STRICT",

    "CREATE TABLE mqlite_messages (\n"
    "  queue_id                INTEGER NOT NULL,\n"
    "  klass                   INTEGER NOT NULL,\n"
    "  seq                     INTEGER NOT NULL,\n"
    "  state                   INTEGER NOT NULL,\n"
    "  is_head                 INTEGER NOT NULL,\n"
    "  priority                INTEGER NOT NULL,\n"
    "  group_key               BLOB,\n"
    "  enqueued_at             INTEGER NOT NULL,\n"
    "  visible_at              INTEGER NOT NULL,\n"
    "  expires_at              INTEGER NOT NULL,\n"
    "  delivery_count          INTEGER NOT NULL,\n"
    "  locked_until            INTEGER NOT NULL,\n"
    "  lock_token              BLOB,\n"
    "  dead_lettered_at        INTEGER NOT NULL,\n"
    "  dead_letter_reason      BLOB,\n"
    "  dead_letter_description BLOB,\n"
    "  redriven                INTEGER NOT NULL,\n"
    "  message_id              BLOB,\n"
    "  group_id                BLOB,\n"
    "  subject                 BLOB,\n"
    "  correlation_id          BLOB,\n"
    "  content_type            BLOB,\n"
    "  properties              BLOB,\n"
    "  body                    BLOB NOT NULL,\n"
    "  due_at                  INTEGER GENERATED ALWAYS AS (CASE state WHEN 1 THEN locked_until\n"
    "                            WHEN 3 THEN visible_at WHEN 4 THEN dead_lettered_at ELSE 0 END)\n"
    "                            VIRTUAL,\n"
    "  PRIMARY KEY (queue_id, klass, seq)\n"
    ") STRICT, WITHOUT ROWID",

    // Claim: active heads in delivery order.
    "CREATE INDEX mqlite_msg_claim ON mqlite_messages (queue_id, priority DESC, seq)\n"
    "  WHERE state = 0 AND is_head = 1",
    // Next head of a group: its live members.
    "CREATE INDEX mqlite_msg_group ON mqlite_messages (queue_id, group_key, seq)\n"
    "  WHERE group_key IS NOT NULL AND state <> 4",
    // The time-driven states by their time: leases by expiry (reclaim,
    // recovery), schedules by due time, dead letters oldest first (retention,
    // redrive, purge; ties by seq).
    "CREATE INDEX mqlite_msg_time ON mqlite_messages (queue_id, state, due_at, seq)\n"
    "  WHERE state = 1 OR state = 3 OR state = 4",
    // TTL by deadline (locked rows expire only once their lease ends).
    "CREATE INDEX mqlite_msg_ttl ON mqlite_messages (queue_id, expires_at)\n"
    "  WHERE expires_at > 0 AND state IN (0, 2, 3)",
    // Redriven active heads by age: Stats' oldest claimable (SPEC §6) for the
    // only messages whose seq order is not their enqueued_at order.
    "CREATE INDEX mqlite_msg_redriven ON mqlite_messages (queue_id, enqueued_at)\n"
    "  WHERE state = 0 AND is_head = 1 AND redriven = 1",

    // SPEC §4: dedup records outlive their message for the whole window.
    "CREATE TABLE mqlite_dedup (\n"
    "  queue_id   INTEGER NOT NULL,\n"
    "  key        BLOB NOT NULL,\n"
    "  seq        INTEGER NOT NULL,\n"
    "  body_hash  BLOB NOT NULL,\n"
    "  expires_at INTEGER NOT NULL,\n"
    "  PRIMARY KEY (queue_id, key)\n"
    ") STRICT, WITHOUT ROWID",
    "CREATE INDEX mqlite_dedup_expiry ON mqlite_dedup (expires_at)",

    // SPEC §7.2: settlement receipts, keyed by seq then the request (keys.cc).
    // No index on expiry: maintenance sweeps the keys in order instead
    // (queries.h kSweepReceipts), so a Complete writes one B-tree, not two.
    "CREATE TABLE mqlite_receipts (\n"
    "  key        BLOB PRIMARY KEY,\n"
    "  expires_at INTEGER NOT NULL\n"
    ") STRICT, WITHOUT ROWID",

    // SPEC §7.3: receive attempts and the batch each returned.
    "CREATE TABLE mqlite_attempts (\n"
    "  attempt_id BLOB PRIMARY KEY,\n"
    "  queue_id   INTEGER NOT NULL,\n"
    "  mode       INTEGER NOT NULL,\n"
    "  payload    BLOB NOT NULL,\n"
    "  expires_at INTEGER NOT NULL\n"
    ") STRICT, WITHOUT ROWID",
    "CREATE INDEX mqlite_attempts_expiry ON mqlite_attempts (expires_at)",
};

}  // namespace mqlite::internal

#endif  // MQLITE_STORES_SQLITE_SRC_SCHEMA_H_
