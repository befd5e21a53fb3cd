// The LMDB store's key layout (docs/lmdb-store.md, "Layout"): named
// sub-databases under an "mqlite/" prefix, big-endian keys with the sign bit
// flipped so that byte order is numeric order, every index kept by hand in the
// same write transaction as the row it indexes. The in-memory store's index
// set (stores/memory/src/layout.h) is the model; an index entry is a key with
// an empty value.
//
//   mqlite/meta        "schema" → token; "last_queue_id"; "last_seq" → i64 (raised when a
//                      queue is deleted)
//   mqlite/queue_names name → queue id
//   mqlite/messages    seq → Row (appended: seqs only grow);
//                      ReceiptKey (seq + 32 bytes) → expires_at, right after its row
//   mqlite/index       every secondary index, one B-tree, each behind a one-byte tag:
//     'c' claim        (queue, -priority, seq)    active AND is_head
//     'a' claim_age    (queue, enqueued_at, seq)  same rows, by age
//     'g' group        (queue, len, group_key, seq) group_key present AND not dead-lettered
//     'd' due          (queue, visible_at, seq)   scheduled
//     'l' lease        (queue, locked_until, seq) locked
//     't' ttl          (queue, expires_at, seq)   expires_at > 0 AND active/deferred/scheduled
//     'x' dlq          (queue, dead_lettered_at, seq) dead-lettered
//     's' by_state     (queue, state, seq)        every row
//     'D' dedup expiry (expires_at, queue, key);  'R' receipts (expires_at, key);
//     'A' attempts (expires_at, id)
//     ff  queue records: QueueKey (ff + queue id) → QueueData (config, created_at,
//         per-state counts and bytes, the highest seq the queue ever held)
//   mqlite/dedup       (queue, key) → (seq, expires_at, hash)
//   mqlite/attempts    id → (queue, mode, expires_at, payload)
//
// A commit rewrites every page it changes up to the root (LMDB copies on
// write), so what one operation writes shares pages: one B-tree for the
// indexes (a send touching four small indexes writes one tree, not four roots
// and their records in the main database); queue records at the end of that
// tree, beside the by_state entries a send appends; each receipt beside its
// message's row
// (docs/lmdb-store.md, "Layout").
//
// Changing any of this changes kLmdbSchemaToken; the layout golden test
// (LmdbStore.KeyLayoutGolden, stores/lmdb/tests/lmdb_store_test.cc) pins
// the bytes.
#ifndef MQLITE_STORES_LMDB_SRC_LAYOUT_H_
#define MQLITE_STORES_LMDB_SRC_LAYOUT_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/store_util.h"
#include "mqlite/types.h"

namespace mqlite::lmdb_internal {

inline constexpr int kStates = 5;  // MessageState values 0..4

// The physical sub-databases (kMeta … kIndex), then the indexes kept inside
// mqlite/index, each a logical Db whose keys start with its tag.
enum Db : int {
  kMeta = 0,
  kQueueNames,
  kMessages,
  kDedup,
  kAttempts,
  kIndex,
  kPhysicalDbs,  // the count of the above
  // Kept in mqlite/index after every index (QueueKey).
  kQueues = kPhysicalDbs,
  // Kept in mqlite/messages beside the rows (ReceiptKey).
  kReceipts,
  // Kept in mqlite/index behind their tags.
  kClaim,
  kClaimAge,
  kGroup,
  kDue,
  kLease,
  kTtl,
  kDlq,
  kByState,
  kDedupExp,
  kReceiptExp,
  kAttemptExp,
  kDbCount,
};
inline bool IsIndex(Db db) { return db >= kClaim; }
// The sub-database `db` lives in: itself, kMessages or kIndex.
inline Db Physical(Db db) {
  if (IsIndex(db) || db == kQueues) return kIndex;
  if (db == kReceipts) return kMessages;
  return db;
}
// "mqlite/<name>" (an index: "mqlite/index (<name>)").
const char* DbName(Db db);
char IndexTag(Db db);

// ---- Keys ----------------------------------------------------------------------

// Appends v big-endian with the sign bit flipped (byte order = numeric order).
inline void AppendI64(std::string* out, int64_t v) {
  uint64_t u = static_cast<uint64_t>(v) ^ (uint64_t{1} << 63);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  u = __builtin_bswap64(u);
#endif
  char b[8];
  std::memcpy(b, &u, 8);
  out->append(b, 8);
}
int64_t ReadI64(const char* p);  // the inverse, from 8 bytes
std::string SeqKey(int64_t seq);
// A queue's record in mqlite/index: 0xff, then the id — after every index
// tag, next to the by_state ('s') entries a send appends, so the counter
// update shares a leaf the send writes anyway.
std::string QueueKey(int64_t queue_id);
inline constexpr char kQueueKeyTag = '\xff';
// A settlement receipt in mqlite/messages: the engine's key (which begins with
// the settled seq, big-endian) with the first byte's top bit flipped, so it
// starts with SeqKey(seq) and sorts right after that message's row: the
// Complete that deletes the row writes the receipt into the same leaf.
// Receipt keys are at least 9 bytes (InvalidArgument otherwise, so a key can
// never be taken for a row or a queue record).
Result<std::string> ReceiptKey(std::string_view engine_key);
// Index keys: the tag, then (queue, time-or-rank, seq) — 25 bytes.
inline constexpr size_t kIndexKeySize = 25;
inline constexpr size_t kIndexTimeAt = 9;  // offset of the middle field
inline constexpr size_t kIndexSeqAt = 17;  // offset of the seq
std::string IndexKey(Db db, int64_t queue_id, int64_t b, int64_t seq);
// The tag and the queue: the start of one queue's entries of `db`.
std::string IndexPrefix(Db db, int64_t queue_id);
// Group membership: (tag, queue, u32 length, group key, seq): one group's
// members are contiguous and in seq order.
std::string GroupPrefix(int64_t queue_id, std::string_view group_key);
std::string GroupKey(int64_t queue_id, std::string_view group_key, int64_t seq);
// Expiry twins of the idempotency records: (tag, expires_at, key).
inline constexpr size_t kExpiryKeyAt = 9;
std::string ExpiryKey(Db db, int64_t expires_at, std::string_view key);

// ---- Values ----------------------------------------------------------------------

// A message row: its bookkeeping and what it was sent with
// (mqlite/store_util.h RowState, RowPayload), copied out of the map.
struct Row : RowState, RowPayload {};
std::string EncodeRow(const Row& row);
Result<Row> DecodeRow(std::string_view data);  // Corruption on a malformed value

struct QueueData {
  QueueConfig config;
  int64_t created_at = 0;
  // The highest seq the queue ever held: with meta "last_seq" (raised when a
  // queue is deleted) it bounds every seq ever committed, so a reopened store
  // never reuses one (SPEC §3) without a meta write per send.
  int64_t last_seq = 0;
  std::array<int64_t, kStates> count{};
  std::array<int64_t, kStates> bytes{};
  int64_t total() const {
    int64_t n = 0;
    for (int64_t c : count) n += c;
    return n;
  }
};
std::string EncodeQueue(const QueueData& q);
Result<QueueData> DecodeQueue(std::string_view data);

std::string EncodeDedup(const DedupRecord& r);
Result<DedupRecord> DecodeDedup(std::string_view data);
std::string EncodeAttempt(const AttemptRecord& r);
Result<AttemptRecord> DecodeAttempt(std::string_view data);

}  // namespace mqlite::lmdb_internal

#endif  // MQLITE_STORES_LMDB_SRC_LAYOUT_H_
