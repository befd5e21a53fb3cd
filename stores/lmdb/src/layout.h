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
//   mqlite/messages    seq → row: its header (what the queue rules read and
//                      change), then its payload (what it was sent with, body
//                      last; written once, copied as bytes on every rewrite);
//                      ReceiptKey (seq + 32 bytes) → expires_at, right after its row
//   mqlite/index       every secondary index, one B-tree, each behind a one-byte tag:
//     'c' claim        (queue, -priority, seq)    active AND is_head
//     'r' redriven     (queue, enqueued_at, seq)  the same rows, if redriven (Stats'
//                      oldest age: the others come in seq order from 'c')
//     'g' group        (queue, len, group_key, seq) group_key present AND not dead-lettered
//     'd' due          (queue, visible_at, seq)   scheduled
//     'l' lease        (queue, locked_until, seq) locked
//     't' ttl          (queue, expires_at, seq)   expires_at > 0 AND active/deferred/scheduled
//     'x' dlq          (queue, dead_lettered_at, seq) dead-lettered
//     's' by_state     (queue, StateClass, seq)   every row; active and locked share
//                      class 0, so a claim, an abandon or a renew leaves it alone
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
// message's row; and no index a claim would move that a Peek or Stats can do
// without (docs/lmdb-store.md, "Layout").
//
// Changing any of this changes kLmdbSchemaToken; the layout golden test
// (LmdbStore.KeyLayoutGolden, stores/lmdb/tests/lmdb_store_test.cc) pins
// the bytes.
#ifndef MQLITE_STORES_LMDB_SRC_LAYOUT_H_
#define MQLITE_STORES_LMDB_SRC_LAYOUT_H_

#include <array>
#include <cstdint>
#include <cstdlib>
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
  kRedriven,
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

// A key built in place, without allocating. The longest the store builds is
// a dedup expiry key: 1 + 8 + 8 + an engine key of at most 160 bytes
// (store.h); a group key is 1 + 8 + 4 + at most 128 + 8. LMDB allows 511.
class Key {
 public:
  static constexpr size_t kCapacity = 256;
  Key() = default;
  explicit Key(std::string_view bytes) { Append(bytes); }
  Key& Byte(char b) {
    if (n_ == kCapacity) std::abort();
    buf_[n_++] = b;
    return *this;
  }
  Key& I64(int64_t v);  // big-endian, sign bit flipped (byte order = numeric order)
  Key& U32(uint32_t v);
  Key& Append(std::string_view bytes) {
    if (bytes.size() > kCapacity - n_) std::abort();  // beyond store.h's key sizes: a bug
    std::memcpy(buf_.data() + n_, bytes.data(), bytes.size());
    n_ += bytes.size();
    return *this;
  }
  std::string_view view() const { return std::string_view(buf_.data(), n_); }
  size_t size() const { return n_; }
  friend bool operator==(const Key& a, const Key& b) { return a.view() == b.view(); }
  friend bool operator<(const Key& a, const Key& b) { return a.view() < b.view(); }

 private:
  std::array<char, kCapacity> buf_;
  size_t n_ = 0;
};

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
Key SeqKey(int64_t seq);
// A queue's record in mqlite/index: 0xff, then the id — after every index
// tag, next to the by_state ('s') entries a send appends, so the counter
// update shares a leaf the send writes anyway.
Key QueueKey(int64_t queue_id);
inline constexpr char kQueueKeyTag = '\xff';
// A settlement receipt in mqlite/messages: the engine's key (which begins with
// the settled seq, big-endian) with the first byte's top bit flipped, so it
// starts with SeqKey(seq) and sorts right after that message's row: the
// Complete that deletes the row writes the receipt into the same leaf.
// Receipt keys are at least 9 bytes (InvalidArgument otherwise, so a key can
// never be taken for a row or a queue record).
Result<Key> ReceiptKey(std::string_view engine_key);
// Index keys: the tag, then (queue, time-or-rank, seq) — 25 bytes.
inline constexpr size_t kIndexKeySize = 25;
inline constexpr size_t kIndexTimeAt = 9;  // offset of the middle field
inline constexpr size_t kIndexSeqAt = 17;  // offset of the seq
Key IndexKey(Db db, int64_t queue_id, int64_t b, int64_t seq);
// The tag and the queue: the start of one queue's entries of `db`.
Key IndexPrefix(Db db, int64_t queue_id);
// The tag, the queue and the middle field: the start of one queue's entries
// of `db` with that field (one priority of the claim index, one state class).
Key IndexPrefix(Db db, int64_t queue_id, int64_t b);
// Group membership: (tag, queue, u32 length, group key, seq): one group's
// members are contiguous and in seq order.
Key GroupPrefix(int64_t queue_id, std::string_view group_key);
Key GroupKey(int64_t queue_id, std::string_view group_key, int64_t seq);
// Expiry twins of the idempotency records: (tag, expires_at, key).
inline constexpr size_t kExpiryKeyAt = 9;
Key ExpiryKey(Db db, int64_t expires_at, std::string_view key);

// The by_state index's class of a state: locked rows share class 0 with
// active ones, so the transitions between them (claim, abandon, lease
// reclaim) do not move the entry; every other state is its own class.
inline int64_t StateClass(MessageState s) {
  return s == MessageState::kLocked ? static_cast<int64_t>(MessageState::kActive)
                                    : static_cast<int64_t>(s);
}

// ---- Values ----------------------------------------------------------------------

// A message row's header: its bookkeeping (mqlite/store_util.h RowState),
// whether it was redriven (Stats' oldest age, the 'r' index) and its body's
// size (the queue's byte counters), copied out of the map. The payload that
// follows it in the value — ids, subject, properties, body — is written once
// by a send or a redrive and only ever copied as bytes after that.
struct Row : RowState {
  bool redriven = false;
  int64_t body_size = 0;
};
// The value of a row in `out`: `header`, then `payload` (EncodePayload's
// bytes; a send passes none and appends them with EncodePayload).
void EncodeRow(const Row& header, std::string_view payload, std::string* out);
// The header of a stored row; `payload`, if given, is set to the rest of
// `data` (a view into it). Corruption on a malformed value.
Result<Row> DecodeRow(std::string_view data, std::string_view* payload = nullptr);
// Appends what a message was sent with, as a row's payload.
void EncodePayload(const OutgoingMessage& m, std::string* out);
// The inverse, copied out; Corruption on a malformed payload.
Result<RowPayload> DecodePayload(std::string_view payload);

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
