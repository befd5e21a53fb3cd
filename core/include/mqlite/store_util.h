// Queue rules for store implementers: policy in core, mechanism in stores.
//
// Every store makes the same decisions about a message row: may this settle
// touch it, where does an abandoned message go, is a claim candidate
// delivered or retired, which dead letters does retention drop, what does a
// redriven copy look like. They are made here, once, as small pure functions
// over the row's fields and the request ("verdicts"). A store reads its row,
// asks for the verdict and applies it with its own writes (SQL statements,
// B-tree puts, map updates); the store.h contract it implements stays the
// store's. Each comment cites the SPEC § (docs/spec.md) it decides.
//
// Also here: RunGate, the cancellable wait at the start of Store::Run
// (RunOptions, SPEC §10), and NativeHandleAs, the typed accessor behind a
// store's native-handle function (SPEC §8).
//
// Thread-safety: the functions are pure; a RunGate may be used from any thread.
#ifndef MQLITE_STORE_UTIL_H_
#define MQLITE_STORE_UTIL_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite {

class TxContext;

// The fields of a stored message that the rules read. A store's row type may
// derive from it (both in-tree stores do) or fill one per decision.
struct RowFacts {
  MessageState state = MessageState::kActive;
  int32_t delivery_count = 0;
  int64_t expires_at = 0;    // 0 = never
  int64_t locked_until = 0;  // locked rows only
  LockToken token;           // locked rows only
};

// The rest of a row's bookkeeping, as an ordered key-value store keeps it
// (the memory and LMDB stores; SQL stores keep the same as columns): which
// queue, group headship (SPEC §5), and the dead-letter facts (§7.4).
struct RowState : RowFacts {
  int64_t queue_id = 0;
  bool is_head = false;  // the group's head, or an ungrouped message
  int32_t priority = 0;
  std::optional<std::string> group_key;  // queue-internal key of its group, if any
  int64_t enqueued_at = 0;
  int64_t visible_at = 0;
  int64_t dead_lettered_at = 0;
  std::optional<std::string> dead_letter_reason;
  std::optional<std::string> dead_letter_description;
};

// What a message was sent with (SPEC §3); never changed afterwards.
struct RowPayload {
  std::string body;
  std::optional<std::string> message_id;
  std::optional<std::string> group_id;
  std::optional<std::string> subject;
  std::optional<std::string> correlation_id;
  std::optional<std::string> content_type;
  std::map<std::string, std::string> properties;
};

// The Message of row `seq` in queue `queue_name`, lock token included
// (Peek's callers clear it: SPEC §6).
Message ToMessage(int64_t seq, std::string_view queue_name, const RowState& row,
                  const RowPayload& payload);
// The same, moving the payload's strings into the Message.
Message ToMessage(int64_t seq, std::string_view queue_name, const RowState& row,
                  RowPayload&& payload);

// A message's properties as one byte string, for stores that keep them in
// one column (SQLite, PostgreSQL): repeated (u32 little-endian key length,
// key, u32 little-endian value length, value) in key order; "" for none.
std::string EncodePropertyBlob(const std::map<std::string, std::string>& props);
// The inverse; Corruption if `in` is not such a string.
Status DecodePropertyBlob(std::string_view in, std::map<std::string, std::string>* out);

// SPEC §3: the message's TTL has passed (expires_at == 0 never expires).
inline bool Expired(const RowFacts& row, int64_t now) {
  return row.expires_at > 0 && row.expires_at <= now;
}
// SPEC §7.4: the message has used every delivery its queue allows.
inline bool DeliveriesExhausted(const RowFacts& row, const QueueConfig& config) {
  return row.delivery_count >= config.max_delivery_count;
}
// A claim at `now` would deliver it rather than retire it (DecideClaim's
// kDeliver). Stats' oldest claimable counts only heads for which this holds.
inline bool WouldDeliver(const RowFacts& row, const QueueConfig& config, int64_t now) {
  return !Expired(row, now) && !DeliveriesExhausted(row, config);
}

// Which rows the time- and order-driven indexes of a store must cover (SPEC
// §11: every claim and maintenance step seeks one of them, never a scan). The
// in-memory and LMDB stores key their indexes by these; the SQLite store's
// partial indexes say the same in their WHERE clauses.
//   claim: what a Claim may take — active, and the head of its group (or
//     ungrouped). Blocked group members are never in it.
inline bool InClaimIndex(MessageState state, bool is_head) {
  return state == MessageState::kActive && is_head;
}
//   group membership: every live (not dead-lettered) member of a group.
inline bool InGroupIndex(MessageState state, bool grouped) {
  return grouped && state != MessageState::kDeadLettered;
}
//   TTL: what ExpireMessages may retire — an expiring message that is not
//     locked (a locked one expires once its lease ends) nor already dead.
inline bool InTtlIndex(const RowFacts& row) {
  return row.expires_at > 0 &&
         (row.state == MessageState::kActive || row.state == MessageState::kDeferred ||
          row.state == MessageState::kScheduled);
}

// What a store does to one row. Each Decide* says which actions it returns.
struct Verdict {
  enum class Action {
    kDeliver,     // Claim: lock it (PeekLock), or delete and return it
    kUnlock,      // locked → `to`, token and lease cleared
    kRenew,       // stays locked until `locked_until`
    kDeadLetter,  // → dead-lettered (`reason`, `description`, dead_lettered_at
                  //   = now), token and lease cleared, headship passes on
    kDelete,      // the row goes, headship passes on
  };
  Action action = Action::kDeliver;
  MessageState to = MessageState::kActive;  // kUnlock: active, deferred or scheduled
  int64_t visible_at = 0;                   // kUnlock to scheduled
  int64_t locked_until = 0;                 // kRenew
  std::string reason;                       // kDeadLetter: a constant or the request's (a copy)
  std::optional<std::string> description;   // kDeadLetter
};

// SPEC §3 TTL (StoreTxn::ExpireMessages, and Claim's expired candidates):
// kDeadLetter (kReasonTtlExpired) if the queue dead-letters on expiry, else
// kDelete.
Verdict DecideExpire(const QueueConfig& config);

// SPEC §5, §7.4 (StoreTxn::Claim), for one candidate — an active head: TTL
// expired → DecideExpire; out of deliveries → kDeadLetter
// (kReasonMaxDelivery); else kDeliver. A retired candidate does not count
// towards max_messages.
Verdict DecideClaim(const RowFacts& candidate, const QueueConfig& config, int64_t now);

// SPEC §6 lease expiry, §7.1 recovery (StoreTxn::ReclaimLocks), for a locked
// row: out of deliveries → kDeadLetter (kReasonMaxDelivery); else kUnlock to
// active.
Verdict DecideReclaim(const RowFacts& locked, const QueueConfig& config);

// SPEC §6 (StoreTxn::Settle). `row` is message req.seq of this queue, nullptr
// if there is none. LockLost naming the seq unless the row is locked under
// exactly req.token with locked_until > req.now — whether or not maintenance
// ran. Otherwise, by req.op:
//   Complete → kDelete
//   Abandon  → out of deliveries: kDeadLetter (kReasonMaxDelivery); else
//              kUnlock to active (delay 0) or to scheduled at now + delay
//   Reject   → kDeadLetter (req.reason, req.description)
//   Defer    → kUnlock to deferred
//   Renew    → kRenew until max(locked_until, req.renew_until)
Result<Verdict> DecideSettle(const RowFacts* row, const QueueConfig& config,
                             const SettleRequest& req);
// What Settle returns once a DecideSettle verdict is applied.
SettleResult SettleResultOf(const Verdict& verdict);
// A Settle's successful end: records req.receipt_key (if set) through
// txn.PutReceipt, then returns the verdict's result.
Result<SettleResult> Settled(StoreTxn& txn, const SettleRequest& req, const Verdict& verdict);
// The rest of a StoreTxn::SettleMany that settled some requests its own way
// (done[i]): txn.Settle(queue, reqs[i]) into (*out)[i] for every other i, in
// order. A LockLost lands in *out; any other error is returned.
Status SettleTheRest(StoreTxn& txn, const QueueRecord& queue, std::span<const SettleRequest> reqs,
                     const std::vector<bool>& done, std::vector<Result<SettleResult>>* out);

// The row changes a verdict makes, for stores that rewrite a whole row:
// kUnlock (to `to`, token and lease cleared, visible_at set when scheduled)
// and kRenew (locked_until) change `row` in place; the other actions leave
// it alone (kDeadLetter: DeadLetterRow; kDelete: the row goes; kDeliver:
// Claim's own).
void ApplyToRow(const Verdict& verdict, RowState* row);
// SPEC §7.4: dead-lettered at `now` with `reason`, token and lease cleared,
// no longer a head. A store that does this to a group's head then makes the
// group's lowest-seq live member its head (SPEC §5).
void DeadLetterRow(std::string_view reason, const std::optional<std::string>& description,
                   int64_t now, RowState* row);

// The refusals of single-message operations: OK, or NotFound naming `seq`.
// `row` is the message of this queue, nullptr if there is none.
//   CancelScheduled (SPEC §4): scheduled and never delivered.
Status CheckCancelScheduled(const RowFacts* row, int64_t seq);
//   ClaimDeferred (SPEC §6 ReceiveDeferred): deferred, not expired, deliveries left.
Status CheckClaimDeferred(const RowFacts* row, const QueueConfig& config, int64_t seq,
                          int64_t now);
//   DeadLetterMessage (SPEC §6 operator paths): any live (not dead-lettered) state.
Status CheckDeadLetterMessage(const RowFacts* row, int64_t seq);
//   DeleteMessage (SPEC §6 operator paths): any state.
Status CheckDeleteMessage(const RowFacts* row, int64_t seq);

// SPEC §5 (StoreTxn::Claim, Receive-and-Delete): the copy a claim that
// deletes returns — the row as it was, with delivery_count + 1, state
// active, and no token or lease.
void AsReceivedAndDeleted(Message* m);

// What a store did with one claim candidate (ClaimInChunks' `take`).
enum class ClaimTake {
  kDelivered,  // locked (Peek-Lock) or deleted and returned: counts towards max_messages
  kRetired,    // expired or dead-lettered (a non-kDeliver verdict applied): does not count
  kBusy,       // left alone this time (e.g. its group is locked by another transaction)
};

// SPEC §5 (StoreTxn::Claim) for stores that read claim candidates in claim
// order, a chunk at a time (the SQL stores): the batch rules, once. `fetch(n)`
// returns up to n candidates — active heads of the queue, priority desc, seq
// asc, as the store's claim index holds them now (Row: a RowFacts with `seq`
// and `group_key`). `take(row, verdict)` applies the DecideClaim verdict
// with the store's writes and says what it did. At most one message per
// group per batch; a candidate whose group was already taken, or that
// `take` left busy, is skipped and the next fetch widened by one. After a
// grouped candidate is retired the chunk is read again, because the member
// it promoted may outrank the rest of the chunk (exact in-batch order).
template <class Row, class Fetch, class Take>
Status ClaimInChunks(const ClaimRequest& req, const QueueConfig& config, Fetch&& fetch,
                     Take&& take) {
  int delivered = 0;
  std::set<int64_t> skipped;           // seen and not taken: stay in the index
  std::set<std::string> taken_groups;  // one message per group per batch
  while (delivered < req.max_messages) {
    const int64_t limit =
        req.max_messages - delivered + static_cast<int64_t>(skipped.size());
    MQLITE_ASSIGN_OR_RETURN(std::vector<Row> rows, fetch(limit));
    bool progressed = false, newly_skipped = false;
    for (const Row& r : rows) {
      if (delivered >= req.max_messages) break;
      if (skipped.count(r.seq)) continue;
      if (r.group_key && taken_groups.count(*r.group_key)) {
        skipped.insert(r.seq);
        newly_skipped = true;
        continue;
      }
      MQLITE_ASSIGN_OR_RETURN(ClaimTake t, take(r, DecideClaim(r, config, req.now)));
      if (t == ClaimTake::kBusy) {
        skipped.insert(r.seq);
        newly_skipped = true;
        continue;
      }
      progressed = true;
      if (t == ClaimTake::kRetired) {
        if (r.group_key) break;  // re-read: a promoted member may come first
        continue;
      }
      ++delivered;
      if (r.group_key) taken_groups.insert(*r.group_key);
    }
    // Done when the index holds nothing but skipped candidates; otherwise
    // read again: claims and skips changed what the next read returns.
    if (!progressed && (!newly_skipped || rows.size() < static_cast<size_t>(limit))) break;
  }
  return Status::OK();
}

// SPEC §2 (StoreTxn::UpsertQueue): InvalidArgument if the ordering changes
// while the queue holds messages (their group keys were fixed at send).
Status CheckOrderingChange(const QueueConfig& stored, const QueueConfig& requested,
                           bool queue_holds_messages);
// StoreTxn::Claim: Internal if PeekLock brought fewer tokens than max_messages.
Status CheckClaimRequest(const ClaimRequest& req);
// spec.md §9 agreed retention defaults (Store::RegisterEngine): OK if an
// opening engine's defaults (`mine`) equal those of an engine still live on
// the store (`live`); otherwise InvalidArgument naming every EngineOptions
// field that differs with both values, and what to do about it.
Status CheckAgreedDefaults(const EngineDefaults& mine, const EngineDefaults& live);
// What a store opened read-only (StoreCapabilities::read_only) answers a
// write — Run(kWrite), ReclaimSpace — with: InvalidArgument naming `store`
// ("database '/x/q.db'", "LMDB store /x/env") and what a write needs.
Status ReadOnlyWriteRefused(std::string_view store);

// SPEC §6 retention (StoreTxn::EnforceRetention). Walk the queue's dead
// letters oldest dead_lettered_at first, delete each one Evict() accepts, and
// stop at the first it refuses: everything after is newer, and the DLQ is
// within every bound.
class RetentionPass {
 public:
  // False when no bound is set: skip the walk (and reading the totals).
  static bool Bounded(const RetentionBounds& bounds) {
    return bounds.max_age_ms > 0 || bounds.max_count > 0 || bounds.max_bytes > 0;
  }
  // `dlq_count` and `dlq_bytes`: the queue's dead letters and their body bytes.
  RetentionPass(const RetentionBounds& bounds, int64_t now, int64_t dlq_count, int64_t dlq_bytes)
      : bounds_(bounds), now_(now), count_(dlq_count), bytes_(dlq_bytes) {}
  // True if this dead letter must go (it is then counted as gone).
  bool Evict(int64_t dead_lettered_at, int64_t body_size);

 private:
  RetentionBounds bounds_;
  int64_t now_, count_, bytes_;
};

// SPEC §6 Redrive (StoreTxn::Redrive): the fields a dead letter with
// `group_id` gets as a new active message of `target` (new seq,
// delivery_count 0, no dead-letter fields; body, ids, properties, priority
// and enqueued_at kept). nullopt: skip it — it stays dead-lettered — because
// a group_fifo target needs a group_id.
struct RedrivePlan {
  std::optional<std::string> group_key;  // GroupKeyFor(target ordering); head iff no live member
  int64_t visible_at = 0;                // now
  int64_t expires_at = 0;                // now + target default_ttl_ms; 0 = never
};
std::optional<RedrivePlan> PlanRedrive(const std::optional<std::string>& group_id,
                                       const QueueConfig& target, int64_t now);

// The wait at the start of Store::Run: one exclusive holder (a writer) or
// many shared ones (readers) at a time; a waiting exclusive holds off new
// shared ones so it cannot starve. Acquire gives up promptly, having done
// nothing, once options.stop is requested or options.deadline passes:
// Cancelled, "... while waiting for <what>" (SPEC §10). Every successful
// Acquire must be paired with a Release of the same mode.
class RunGate {
 public:
  enum class Mode { kExclusive, kShared };
  Status Acquire(Mode mode, const RunOptions& options, std::string_view what);
  void Release(Mode mode);

 private:
  std::mutex mu_;
  std::condition_variable_any cv_;
  bool writer_ = false;
  int readers_ = 0;
  int writers_waiting_ = 0;
};

// SPEC §8: tx.native_handle() as `T*`, after checking that the Tx runs on a
// store whose StoreCapabilities::native_handle_type is `type`. For a store's
// public accessor (SqliteHandle, MemoryHandle); `caller` names it in errors.
// InvalidArgument on another kind of store or after the callback returned.
Result<void*> NativeHandleOf(TxContext& tx, std::string_view type, std::string_view caller);
template <class T>
Result<T*> NativeHandleAs(TxContext& tx, std::string_view type, std::string_view caller) {
  MQLITE_ASSIGN_OR_RETURN(void* handle, NativeHandleOf(tx, type, caller));
  return static_cast<T*>(handle);
}

}  // namespace mqlite

#endif  // MQLITE_STORE_UTIL_H_
