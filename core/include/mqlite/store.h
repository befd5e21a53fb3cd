// mqlite::Store — the store boundary (SPEC §1, §12).
//
// A Store is the persistence layer under the engine: SQLite, LMDB, PostgreSQL,
// an in-memory store, or a stranger's port. The engine owns validation, limits,
// the clock, token generation, defaults, maintenance scheduling, wake-ups and
// error mapping; a store owns its data layout and the queries that make each
// operation below fast (SPEC §11: seek an index, never scan a backlog).
//
// Shape: every operation runs inside a StoreTxn handed to the body of
// Store::Run. One Run is ONE atomic unit: it commits entirely when the body
// returns OK and leaves no trace otherwise (SPEC §1). The engine composes
// several operations into one Run when the SPEC needs them in one commit (a
// send and its dedup records; a settle and its receipt), and may compose the
// requests of several callers into one Run (group commit, SPEC §9): they run
// back to back, and if one fails the Run is rolled back and redone with each
// request in its own Savepoint, so a failing request never fails its
// neighbours. An operation that returns one of its contract's own errors
// must therefore leave the transaction usable.
//
// Nothing here assumes SQL, a single writer, or a file. A store chooses its
// own concurrency: Run may serialise bodies (SQLite, LMDB) or run them
// concurrently under row locks (PostgreSQL), as long as each body sees the
// isolation its operations require (see Claim for the one hard case).
//
// Errors: operations return the codes named in their contract; anything else a
// store hits is mapped by the store's own ToStatus() into StatusCode (busy or a
// dropped connection before COMMIT → Unavailable; lost after COMMIT was sent →
// OutcomeUnknown; disk/map full → StoreFull; unreadable data → Corruption).
// When an operation fails inside a body, the body's writes so far are still
// pending; the engine either propagates the failure (Run rolls back) or rolls
// back only a Savepoint.
//
// Thread-safety: Store::Run and Capabilities are safe to call from many
// threads. A StoreTxn is used by one thread, only inside its body; using it
// after the body returns is undefined (the engine never does; StoreWrapper
// never does).
//
// Evolution (as in sqlite3_vfs): new optional operations get a default that
// returns Unimplemented, advertised by StoreCapabilities.
#ifndef MQLITE_STORE_H_
#define MQLITE_STORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <stop_token>
#include <utility>
#include <vector>

#include "mqlite/status.h"
#include "mqlite/types.h"

namespace mqlite {

// What kind of store this is: the engine and the TCK adapt to it (SPEC §12).
struct StoreCapabilities {
  int version = 1;  // of this struct and of the boundary
  // Exclusive (embedded) stores admit one engine at a time, so every locked row
  // found at open is an orphan and is reclaimed (SPEC §7.1). Shared stores
  // reclaim only expired leases.
  bool exclusive = true;
  // Name of the native type Tx exposes (SPEC §8): "sqlite3", "PGconn",
  // "MDB_txn", ...; empty if the store has none.
  std::string native_handle_type;
  // What "crash" means for this store, for the TCK's crash injection:
  // "process" (SIGKILL of the owning process loses nothing committed), or
  // "none" (state does not survive the process, e.g. an in-memory store).
  std::string crash_model = "process";
  std::string name;  // "sqlite", "lmdb", "postgres", ...
  // How many write transactions the store can usefully run at once: group
  // commit (SPEC §9) runs at most this many groups concurrently, so it never
  // turns a store that runs bodies concurrently into a one-connection
  // writer. 1 for a store with a single writer (SQLite, LMDB, memory).
  int write_concurrency = 1;
  // The store acts on StoreTxn::FinalCallFollows (it may send COMMIT with a
  // lone call's last statement, saving a round trip). Group commit then
  // keeps a caller that found no one queued alone in its transaction. When
  // false (an embedded store), a single writer's group instead takes the
  // callers that queue while its members run into the same commit (spec.md
  // §9 "Group commit": late joiners).
  bool commits_with_final_call = false;
  // Store::Subscribe is implemented: a long-poll wakes when any engine or
  // process sharing the data commits a change to its queue (spec.md §9).
  bool change_feed = false;
  // The change feed reports another engine's commits to a queue only while
  // some subscription watches that queue (ChangeSubscription::Watch), so
  // that commits nobody waits for cost no wake-ups: a long-poll that slept
  // this long without a wake-up (ms, ≥ 0) watches its queue and claims
  // again. Absent (-1): every change is reported, no Watch is needed.
  int64_t feed_watch_after_ms = -1;
  // Store::TryLockMaintenance is implemented: engines sharing the data take
  // turns maintaining each queue, and a maintenance pass skips a queue
  // another engine is maintaining (spec.md §9).
  bool maintenance_lock = false;
  // Store::RegisterEngine is implemented: an engine opening the data is
  // refused unless its retention defaults are those of the live engines
  // already using it (spec.md §9).
  bool engine_registry = false;
  // Opened for inspection only (SqliteOptions::read_only,
  // LmdbOptions::read_only): the store takes no exclusive lock, so the
  // process that owns the data keeps running; Run(kWrite) refuses with
  // InvalidArgument, having done nothing. An engine on such a store skips
  // registration, recovery at open and background maintenance (it owns
  // nothing to recover), so it only reads: ListQueues, GetQueue, Peek,
  // PeekDeadLetters, Stats. Every Read sees the latest commit.
  bool read_only = false;
};

// What happens to the space that deletes free (spec.md §1 "Space reclaim",
// G7), as a store's kit profile declares it and the kit grades it.
enum class SpaceMode : int {
  // Store::ReclaimSpace gives it back: after a drain and maintenance the
  // store is much smaller than at its peak (SQLite: incremental_vacuum).
  kShrinks = 0,
  // It stays allocated but is reused: filling the store again to its old
  // peak does not grow it (LMDB's free-page list).
  kReused = 1,
};

// A queue as the store holds it: the engine-resolved config plus the store's
// id. Ids are store-assigned, stable for the life of the queue, and never
// reused for another queue.
struct QueueRecord {
  int64_t id = 0;
  QueueConfig config;  // as the application gave it (zeros inherit engine defaults)
};

// The ordering group a message belongs to in a queue of `ordering` (SPEC §5):
// standard and group_fifo → its group_id (nullopt = ungrouped); strict_fifo →
// "" for every message (the whole queue is one group). The one definition
// used by the engine on send and by stores on Redrive.
inline std::optional<std::string> GroupKeyFor(Ordering ordering,
                                              const std::optional<std::string>& group_id) {
  if (ordering == Ordering::kStrictFifo) return std::string();
  return group_id;
}

// One message to insert (built and validated by the engine).
struct EnqueueItem {
  const OutgoingMessage* message = nullptr;  // not owned; valid during the call
  // The ordering group the store must enforce (SPEC §5), decided by the engine
  // from the queue's ordering: nullopt = ungrouped. For strict_fifo every
  // message of the queue carries the same key. Distinct from message->group_id,
  // which is returned to consumers verbatim.
  std::optional<std::string> group_key;
  int64_t enqueued_at = 0;
  int64_t visible_at = 0;  // > enqueued_at for scheduled messages
  int64_t expires_at = 0;  // 0 = never
  MessageState state = MessageState::kActive;  // kActive or kScheduled
};

// Parameters of one Claim (SPEC §5).
struct ClaimRequest {
  int64_t now = 0;
  int max_messages = 1;  // 1–256
  ReceiveMode mode = ReceiveMode::kPeekLock;
  int64_t locked_until = 0;  // now + lock_duration (PeekLock only)
  // At least max_messages fresh tokens; the i-th claimed message gets tokens[i]
  // (PeekLock only).
  std::span<const LockToken> tokens;
};

enum class SettleOp : int { kComplete = 0, kAbandon = 1, kReject = 2, kDefer = 3, kRenew = 4 };
std::string_view SettleOpName(SettleOp op);

// One settle (SPEC §6).
struct SettleRequest {
  int64_t seq = 0;
  LockToken token;
  SettleOp op = SettleOp::kComplete;
  int64_t now = 0;
  int64_t delay_ms = 0;       // Abandon only
  std::string reason;         // Reject only
  std::string description;    // Reject only
  int64_t renew_until = 0;    // Renew only: now + lock_duration
  // The replay receipt (SPEC §7.2) a successful Settle records in the same
  // transaction, exactly as PutReceipt(receipt_key, receipt_expires_at)
  // would; none when empty (Renew never has one). In the request so that a
  // store can write it with the settle's own statement.
  std::string receipt_key;
  int64_t receipt_expires_at = 0;
};

struct SettleResult {
  MessageState new_state = MessageState::kActive;  // meaningless for Complete
  bool deleted = false;                            // Complete
  int64_t locked_until = 0;                        // Renew: the committed value
};

// A dedup record (SPEC §4): the seq the key first produced and a SHA-256 of
// that message's body.
struct DedupRecord {
  int64_t seq = 0;
  std::string body_hash;  // 32 raw bytes
  int64_t expires_at = 0;
};

// A receive attempt (SPEC §7.3): which queue and mode it claimed on, and the
// engine's encoding of the batch it returned.
struct AttemptRecord {
  int64_t queue_id = 0;
  ReceiveMode mode = ReceiveMode::kPeekLock;
  std::string payload;
  int64_t expires_at = 0;
};

// Engine-wide retention defaults resolved per queue by the engine (SPEC §6):
// values ≤ 0 here mean unbounded.
struct RetentionBounds {
  int64_t max_age_ms = -1;
  int64_t max_count = -1;
  int64_t max_bytes = -1;
};

// What the engines sharing a store must agree on (spec.md §9 "Agreed
// retention defaults"; Store::RegisterEngine): the engine-wide defaults that
// a queue's 0 inherits, so a queue is not trimmed by one engine's bounds and
// then by another's. The engine resolves them before registering: every
// field is > 0, or -1 for unbounded, so equal meaning is equal value.
struct EngineDefaults {
  RetentionBounds dlq_retention;  // EngineOptions::dlq_max_age_ms / _count / _bytes
};

// Stats' bound on entries visited per kind past the first (see StoreTxn::Stats).
inline constexpr int64_t kStatsProbeLimit = 256;

// Operations inside one store transaction. Unless a contract says otherwise,
// `queue` was obtained from GetQueue/UpsertQueue in the same Run, and an
// operation on queue A never reads or changes messages of queue B (SPEC §2:
// a seq of another queue is simply NotFound / LockLost here).
class StoreTxn {
 public:
  StoreTxn() = default;
  StoreTxn(const StoreTxn&) = delete;
  StoreTxn& operator=(const StoreTxn&) = delete;
  virtual ~StoreTxn() = default;

  // ---- Queues (SPEC §2) ----------------------------------------------------

  // Creates the queue, or replaces the config of an existing queue of that
  // name (keeping its id and messages). Sets *created accordingly. (The
  // engine's CreateQueue calls it only after GetQueue found no queue of that
  // name in the same transaction; UpdateQueue only after it found one.)
  // InvalidArgument if `config.ordering` differs from the stored one while the
  // queue holds any message (group keys were fixed at send time).
  virtual Result<QueueRecord> UpsertQueue(const QueueConfig& config, int64_t now,
                                          bool* created) = 0;
  // QueueNotFound if absent.
  virtual Result<QueueRecord> GetQueue(std::string_view name) = 0;
  // All queues, ordered by name.
  virtual Result<std::vector<QueueRecord>> ListQueues() = 0;
  // Deletes the queue and every message it holds (any state).
  virtual Status DeleteQueue(const QueueRecord& queue) = 0;

  // ---- Enqueue (SPEC §3, §4) -------------------------------------------------

  // Inserts items in order, assigning each a seq strictly greater than every
  // seq of a committed message of this store (never reused, even after
  // deletes or a reopen; gaps allowed). A seq handed out inside a transaction
  // that then rolled back belonged to no message and may be assigned again
  // (AUTOINCREMENT behaves so); a store may also never reuse it (the SQLite
  // store's reserved counter). All fields must round-trip byte-exact. A message
  // whose group_key has no live (non-dead-lettered) member becomes its group's
  // head. Returns one seq per item.
  virtual Result<std::vector<int64_t>> Enqueue(const QueueRecord& queue,
                                               std::span<const EnqueueItem> items) = 0;

  // Deletes message `seq` if it is scheduled and was never delivered
  // (delivery_count == 0). NotFound otherwise (SPEC §4).
  virtual Status CancelScheduled(const QueueRecord& queue, int64_t seq) = 0;

  // ---- Claim (SPEC §5, §7.4) -------------------------------------------------

  // Claims up to max_messages eligible messages, in order priority DESC, seq
  // ASC, taking at most one message per group_key. Eligible: state active,
  // not expired (expires_at == 0 || expires_at > now), and, when it has a
  // group_key, the head of its group: no live message of the same queue and
  // group_key with a lower seq (locked — expired lease or not —, deferred,
  // scheduled, or active).
  //   PeekLock: state → locked, delivery_count += 1, lock_token = tokens[i],
  //     locked_until = req.locked_until.
  //   ReceiveAndDelete: the row is deleted; the returned copy has
  //     delivery_count += 1, an empty token and locked_until 0.
  // The returned Message reflects the committed row (state locked for
  // PeekLock). A candidate the claim meets that is TTL-expired is expired as
  // ExpireMessages would; a candidate whose delivery_count already reached the
  // queue's max_delivery_count (e.g. the config was lowered) is dead-lettered
  // with kReasonMaxDelivery instead of delivered (§7.4). Neither counts
  // towards max_messages.
  // Atomicity (G2): selecting and locking a message is one indivisible step —
  // two concurrent Claims, in this process or any other engine sharing the
  // store, never return the same message, and group order holds across them.
  // Order within one batch is exact: when a head leaves its group during the
  // batch (expired, dead-lettered, or deleted by ReceiveAndDelete), the
  // promoted next member competes by (priority DESC, seq) with the remaining
  // candidates, unless its group was already taken in this batch.
  // Cost (SPEC §11): O(k log n) for k candidates visited, independent of how
  // many blocked group members, locked, scheduled or dead rows exist.
  virtual Result<std::vector<Message>> Claim(const QueueRecord& queue,
                                             const ClaimRequest& req) = 0;

  // Locks deferred message `seq` (SPEC §6 ReceiveDeferred): state → locked,
  // delivery_count += 1, token and locked_until as given. NotFound if `seq` is
  // not a deferred message of this queue, or (defensively; the engine retires
  // such a message with DeadLetterMessage / DeleteMessage before asking) if
  // it is TTL-expired or has used all max_delivery_count deliveries.
  virtual Result<Message> ClaimDeferred(const QueueRecord& queue, int64_t seq,
                                        const LockToken& token, int64_t now,
                                        int64_t locked_until) = 0;

  // ---- Settle (SPEC §3, §6) --------------------------------------------------

  // Applies req.op to message `req.seq` if and only if it is locked under
  // exactly req.token and locked_until > req.now; LockLost otherwise (the
  // store must not rely on maintenance having reaped expired leases), with
  // nothing changed.
  //   Complete: delete.
  //   Abandon:  if delivery_count ≥ max_delivery_count → dead-lettered
  //             (kReasonMaxDelivery); else delay 0 → active, delay > 0 →
  //             scheduled with visible_at = now + delay.
  //   Reject:   dead-lettered with req.reason / req.description.
  //   Defer:    deferred.
  //   Renew:    locked_until = max(locked_until, req.renew_until).
  // Every transition out of locked (except Renew) clears the token and lease.
  // Dead-lettering sets dead_lettered_at = now. A message leaving its group
  // (deleted or dead-lettered) hands headship to the next live member. On
  // success it also records req.receipt_key, if set (store_util.h Settled);
  // a LockLost records nothing.
  virtual Result<SettleResult> Settle(const QueueRecord& queue, const SettleRequest& req) = 0;

  // The batch settles (SPEC §6 CompleteBatch, RenewBatch): the effect of
  // Settle(queue, reqs[i]) for i = 0, 1, … in order, with (*out)[i] its
  // result — a LockLost lands there and the rest go on. Any other error fails
  // the call (the engine then rolls the transaction back). A store may settle
  // the requests in fewer statements, and in another order as long as every
  // result and the end state are those of the ordered calls (requests on
  // different ungrouped messages commute; a repeated seq must see what the
  // earlier request left, receipt included). Default: Settle per request.
  virtual Status SettleMany(const QueueRecord& queue, std::span<const SettleRequest> reqs,
                            std::vector<Result<SettleResult>>* out) {
    out->clear();
    out->reserve(reqs.size());
    for (const SettleRequest& r : reqs) {
      auto res = Settle(queue, r);
      if (!res && res.error().code() != StatusCode::kLockLost) return res.error();
      out->push_back(std::move(res));
    }
    return Status::OK();
  }

  // ---- Inspection and DLQ (SPEC §6) ------------------------------------------

  // Messages with seq > from_seq in seq order (optionally of one state), at
  // most max_messages. Takes no lock; changes nothing.
  virtual Result<std::vector<Message>> Peek(const QueueRecord& queue,
                                            const PeekOptions& options) = 0;
  // Counts per state, total, body bytes, and oldest_claimable_age_ms: now −
  // the smallest enqueued_at among the messages a Claim at `now` could
  // return once the time-driven transitions a Receive applies first have run
  // (PromoteDue, ReclaimLocks): group heads and ungrouped messages that are
  // (a) active, (b) scheduled with visible_at ≤ now, or (c) locked with
  // locked_until ≤ now and delivery_count < max_delivery_count; in every case
  // not TTL-expired (expires_at == 0 || expires_at > now), and for (a) and (b)
  // delivery_count < max_delivery_count. 0 if there is none. Not the lowest
  // seq: a redriven message keeps its enqueued_at under a new seq.
  // Cost: one index seek per kind, each visiting at most kStatsProbeLimit
  // entries past the first — (a) walks active heads by enqueued_at, (b) and
  // (c) walk the due and lease indexes up to `now` — so Stats stays bounded
  // behind any backlog; a kind with more unclaimable entries than that in
  // front (more than a maintenance batch behind) reports from what it saw.
  virtual Result<QueueStats> Stats(const QueueRecord& queue, int64_t now) = 0;
  // Moves dead letters (oldest dead-lettered first, at most max_messages if >
  // 0, only those dead-lettered at or before now − older_than_ms) to `target`
  // as new active messages: new seq, delivery_count 0, dead-letter fields
  // cleared, visible_at = now, expires_at = now + the target's default_ttl
  // (0 = none; a redriven message starts a fresh life), body, ids,
  // properties, priority and enqueued_at kept; the group key is recomputed
  // for the target with GroupKeyFor. A dead letter without group_id is skipped (stays
  // dead-lettered) when the target is group_fifo. Returns how many moved.
  virtual Result<int64_t> Redrive(const QueueRecord& queue, const QueueRecord& target,
                                  const RedriveOptions& options, int64_t now) = 0;
  // Deletes dead letters (same selection as Redrive). Returns how many.
  virtual Result<int64_t> PurgeDeadLetters(const QueueRecord& queue,
                                           const PurgeOptions& options, int64_t now) = 0;

  // ---- Operator paths (SPEC §6; Engine::DeadLetterMessage / DeleteMessage) ---
  // Optional for old ports (default Unimplemented); the kit requires both.

  // Dead-letters message `seq` of this queue whatever its live state (active,
  // scheduled, deferred, locked — the lease and token are cleared), with
  // `reason` / `description` and dead_lettered_at = now; headship passes to
  // the next live member of its group. NotFound if `seq` is not a message of
  // this queue or is already dead-lettered.
  virtual Status DeadLetterMessage(const QueueRecord& queue, int64_t seq,
                                   std::string_view reason,
                                   const std::optional<std::string>& description, int64_t now) {
    (void)queue, (void)seq, (void)reason, (void)description, (void)now;
    return Status::Unimplemented("DeadLetterMessage is not implemented by this store");
  }
  // Deletes message `seq` of this queue in any state (dead letters included),
  // keeping headship and DLQ totals right. NotFound if absent.
  virtual Status DeleteMessage(const QueueRecord& queue, int64_t seq) {
    (void)queue, (void)seq;
    return Status::Unimplemented("DeleteMessage is not implemented by this store");
  }

  // ---- Maintenance and recovery (SPEC §3, §6, §7.1) --------------------------
  // Each step works on one queue, touches at most `limit` messages, seeks an
  // index (never scans the backlog) and returns how many it changed; a return
  // of `limit` means there may be more.

  // Scheduled with visible_at ≤ now → active.
  virtual Result<int64_t> PromoteDue(const QueueRecord& queue, int64_t now, int64_t limit) = 0;
  // Locked with locked_until ≤ now (all_locked: every locked row, for recovery
  // of an exclusive store at open) → active, or dead-lettered with
  // kReasonMaxDelivery if delivery_count ≥ max_delivery_count.
  virtual Result<int64_t> ReclaimLocks(const QueueRecord& queue, int64_t now, bool all_locked,
                                       int64_t limit) = 0;
  // The time-driven steps a Receive applies right before its Claim, so that
  // the claim sees what maintenance would have made eligible at `now`:
  // PromoteDue(queue, now, limit), then ReclaimLocks(queue, now, false,
  // limit); their counts are not wanted. The body's next call is
  // Claim(queue, req) with req.now == now. A store may defer the steps into
  // that Claim (one statement or round trip fewer), as long as the Claim
  // returns only what it could have returned after them — e.g. it refuses
  // to claim ahead of a message they would have made eligible, applies them
  // and claims again — and what they write commits with the claim or on its
  // own. Default: the two calls, at once. Wrappers need not forward it (the
  // default reaches the target through their PromoteDue and ReclaimLocks).
  virtual Status PrepareClaim(const QueueRecord& queue, int64_t now, int64_t limit) {
    MQLITE_RETURN_IF_ERROR(PromoteDue(queue, now, limit).status());
    return ReclaimLocks(queue, now, /*all_locked=*/false, limit).status();
  }
  // Active, scheduled or deferred with 0 < expires_at ≤ now → dead-lettered
  // (kReasonTtlExpired) if dead_letter_on_expire, else deleted. Locked rows
  // are left alone: they expire once their lease ends unsettled.
  virtual Result<int64_t> ExpireMessages(const QueueRecord& queue, int64_t now, int64_t limit) = 0;
  // Deletes the oldest dead letters first until the queue's DLQ is within
  // every bound (age measured from dead_lettered_at; count; body bytes).
  // Touches nothing but dead letters.
  virtual Result<int64_t> EnforceRetention(const QueueRecord& queue, const RetentionBounds& bounds,
                                           int64_t now, int64_t limit) = 0;

  // ---- Idempotency records (SPEC §4, §7.2, §7.3) ------------------------------
  // Small keyed records written in the same commit as the operation they
  // protect. Keys are opaque bytes chosen by the engine (≤ 160 bytes). A
  // record is live while expires_at > now; a Find must not return a record
  // that is not live, whether or not DropExpiredRecords has run (G4).

  // Dedup: key scoped to the queue.
  virtual Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& queue,
                                                       std::string_view key, int64_t now) = 0;
  // Inserts, or replaces a record that is no longer live.
  virtual Status PutDedup(const QueueRecord& queue, std::string_view key,
                          const DedupRecord& record) = 0;
  // Settlement receipts: true if a live receipt with exactly this key exists.
  // Keys are opaque bytes (40 today); they begin with the settled seq,
  // big-endian, so consecutive settles have neighbouring keys.
  virtual Result<bool> FindReceipt(std::string_view key, int64_t now) = 0;
  virtual Status PutReceipt(std::string_view key, int64_t expires_at) = 0;
  // Receive attempts: keyed by the attempt id alone (store-wide).
  virtual Result<std::optional<AttemptRecord>> FindAttempt(std::string_view attempt_id,
                                                           int64_t now) = 0;
  virtual Status PutAttempt(std::string_view attempt_id, const AttemptRecord& record) = 0;
  // Deletes expired records (expires_at ≤ now), at most `limit` of each kind,
  // to reclaim space (G7); returns how many it deleted. Repeated calls must
  // reach every expired record within a bound — about one pass over the
  // records at `limit` a call — and must keep pace with the records put
  // between calls. A store may find them through an index on expiry, or by
  // sweeping its keys in order from a cursor (the SQLite store's receipts:
  // no index to write on every settle). The kit grades it
  // (Spec7_2_Spec7_3_ExpiredRecordsAreDroppedWithinBoundedCalls).
  virtual Result<int64_t> DropExpiredRecords(int64_t now, int64_t limit) = 0;

  // ---- Savepoints and the native handle --------------------------------------

  // Runs `body` so that, if it fails, everything it did is undone while the
  // enclosing transaction stays usable; on success its writes join the
  // enclosing transaction. Returns the body's status.
  virtual Status Savepoint(const std::function<Status(StoreTxn&)>& body) = 0;

  // The native transaction handle for Tx (SPEC §8), valid only during the
  // current Run's body; nullptr if the store has none. It points to exactly
  // the type named by StoreCapabilities::native_handle_type (for an interface
  // type, cast to the interface pointer before converting to void*).
  virtual void* NativeHandle() { return nullptr; }

  // After application code ran with NativeHandle(): OK if the native
  // transaction is still open; InvalidArgument if the application committed or
  // rolled it back itself (SPEC §8 misuse). Default: cannot tell, OK.
  virtual Status CheckNativeTxnOpen() { return Status::OK(); }

  // ---- Commit hint (optional) -------------------------------------------------

  // The engine calls this only in a write transaction that runs one request's
  // body alone — a Send, SendBatch, Receive or single settle that group commit
  // did not join with others; never in a Tx, a Savepoint or a maintenance
  // pass — right before that body's final write: Enqueue, Claim or Settle.
  // After that call the body writes nothing: it returns, or (a Settle that
  // failed with LockLost) reads with FindReceipt and returns. So a store that
  // pays a network round trip per statement may send its COMMIT together with
  // that call's last statement instead of after the body. The next of those
  // three calls consumes the hint, whether or not the store used it.
  // A store that commits early must keep, for the caller:
  //   - the call succeeded: everything the transaction did is committed (or,
  //     if the COMMIT's fate is unknown, the call fails with OutcomeUnknown);
  //     calls after it run outside the transaction and Run commits nothing
  //     more;
  //   - the call failed: none of its own effects committed (writes made before
  //     it in the body may have — they must be complete on their own, as a
  //     PromoteDue's are), and the call's status is what it would have been
  //     without the hint.
  // A store may also commit early and go on in a new transaction when the
  // call turns out to need more than its first statement (PostgreSQL's claim
  // falls back to its general path so). Wrappers forward it and must not add
  // store calls after forwarding the final call. Default: ignored.
  virtual void FinalCallFollows() {}
};

enum class TxnKind : int {
  // The body only reads (Peek, Stats, GetQueue, ListQueues). A write inside a
  // read transaction is an engine bug; a store may refuse it with Internal.
  kRead = 0,
  kWrite = 1,  // the body may write
};

struct RunOptions {
  // The store may run the body more than once (to grow an LMDB map, to retry a
  // PostgreSQL serialization failure) only when true. A body from Tx runs
  // application code and is never rerun.
  bool rerunnable = true;
  // Cancellation (SPEC §10): while waiting to start (e.g. for the single
  // writer), Run returns Cancelled promptly — having done nothing — once
  // `stop` is requested or `deadline` passes. A body that has started is not
  // interrupted by the store; the engine checks between operations.
  std::stop_token stop;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Called by a store's change feed with the id of a queue whose messages a
// committed write transaction may have changed (spec.md §9). See
// Store::Subscribe.
using ChangeCallback = std::function<void(int64_t queue_id)>;

// A subscription's watch on one queue (ChangeSubscription::Watch), held
// while a long-poll sleeps: destroying it ends the watch.
class FeedWatch {
 public:
  virtual ~FeedWatch() = default;
  // False when the feed already watched the queue, without a gap, since the
  // time Watch was given: every commit the caller's last claim could not
  // see is then reported, and no claim is needed before sleeping.
  bool claim_again = true;
};

// A live subscription to a change feed: destroying it stops the callbacks,
// waiting for one in progress to return.
class ChangeSubscription {
 public:
  virtual ~ChangeSubscription() = default;
  // For a feed that reports a queue only while it is watched
  // (StoreCapabilities::feed_watch_after_ms ≥ 0; spec.md §9): returns once
  // the watch is in effect — from then until the returned object is
  // destroyed, every commit by any engine that may make a message of queue
  // `queue_id` claimable is reported to this subscription. A commit the
  // feed stayed silent about happened before Watch returned, so the caller
  // claims again after it returns and only then sleeps — unless the watch
  // says the feed watched the queue since `claim_began` (FeedWatch::
  // claim_again), the time the caller's last claim began. An error: the feed
  // cannot watch now (the caller falls back to its poll interval). May
  // block for a round trip; never call it holding a lock the callback takes.
  // Default (a feed that reports every change): no watch is needed, null.
  virtual Result<std::unique_ptr<FeedWatch>> Watch(
      int64_t queue_id, std::chrono::steady_clock::time_point claim_began) {
    (void)queue_id;
    (void)claim_began;
    return std::unique_ptr<FeedWatch>();
  }
};

// A held per-queue maintenance lock (Store::TryLockMaintenance): destroying
// it releases the lock.
class MaintenanceLock {
 public:
  virtual ~MaintenanceLock() = default;
};

// An engine's registration with a shared store (Store::RegisterEngine),
// held for the engine's life: destroying it withdraws the registration.
class EngineRegistration {
 public:
  virtual ~EngineRegistration() = default;
};

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  // Releases everything, including an embedded store's file lock. Must not be
  // called while a Run is in progress.
  virtual ~Store() = default;

  virtual StoreCapabilities Capabilities() const = 0;

  // Runs `body` in one transaction of `kind` and commits iff it returns OK;
  // returns the body's error (after rolling back) or the commit's. See
  // RunOptions for re-running and cancellation. A commit whose outcome cannot
  // be known (connection lost after COMMIT was sent) is OutcomeUnknown.
  virtual Status Run(TxnKind kind, const RunOptions& options,
                     const std::function<Status(StoreTxn&)>& body) = 0;

  // Optional change feed (StoreCapabilities::change_feed; spec.md §9): after
  // a write transaction commits — through this Store object or, on a shared
  // store, any other engine or process using the same data — calls
  // on_change(queue_id) for every queue in which it may have made a message
  // claimable (a send; a message back to active; a group's headship handed
  // on; a due schedule promoted; a lease reclaimed; a redrive into it) or
  // whose config it changed. A commit that only claims, renews, defers, or
  // completes or dead-letters without handing headship on made nothing
  // claimable and need not call it (a long-poll has nothing new to find). At
  // least once per such commit and queue; spurious calls (a queue that did
  // not change, a transaction that rolled back) are allowed, missed ones are
  // not — except that a feed with feed_watch_after_ms ≥ 0 may stay silent
  // about another engine's commit to a queue no subscription watched when
  // it committed (ChangeSubscription::Watch). Called on any thread and
  // never while the caller of Run could be blocked on it; on_change must be
  // quick and must not call into the store. Default: Unimplemented (the
  // engine then re-checks long-polls every EngineOptions::poll_interval_ms).
  virtual Result<std::unique_ptr<ChangeSubscription>> Subscribe(ChangeCallback on_change) {
    (void)on_change;
    return Status::Unimplemented("this store has no change feed");
  }

  // Optional per-queue maintenance try-lock (StoreCapabilities::
  // maintenance_lock; spec.md §9): lets the engines sharing a store skip a
  // queue another engine is maintaining instead of all repeating every pass.
  // Returns a held lock on queue `queue_id`, or a null pointer at once — it
  // never waits — when another holder, in this process or another, has it.
  // Outside any transaction; the engine's maintenance pass takes it before a
  // queue's maintenance transaction and releases it after the commit (the
  // small bounded maintenance a Receive does before claiming never takes
  // it). Exclusion only, not correctness: every maintenance step is safe to
  // run concurrently anyway, so a lock whose holder died must not stay taken
  // (it must go with the holder's process or session). Default:
  // Unimplemented (the engine then maintains every queue on every pass).
  // PostgreSQL: pg_try_advisory_lock(<mqlite key>, queue_id) on a connection
  // the returned object keeps until it is destroyed (pg_advisory_unlock and
  // back to the pool); a session-level advisory lock dies with its session,
  // so a crashed engine leaves no queue locked.
  virtual Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t queue_id) {
    (void)queue_id;
    return Status::Unimplemented("this store has no maintenance lock");
  }

  // Optional registry of the live engines (StoreCapabilities::
  // engine_registry; spec.md §9 "Agreed retention defaults"). Engine::Open
  // calls it first, before it writes anything; the returned registration
  // lives as long as the engine (Close or destruction withdraws it). If an
  // engine that is still live registered other `defaults`, refuses with
  // InvalidArgument naming each differing option and both values
  // (mqlite/store_util.h's CheckAgreedDefaults words it), and the open fails
  // with nothing written. Only *live* engines count: once every engine with
  // the old defaults is gone, a fleet that restarts with new ones is
  // admitted, so a registration must not outlive its engine — not even an
  // engine whose process died. Default: Unimplemented (no check; an
  // exclusive store admits one engine anyway).
  // PostgreSQL: a table of engine rows (id, the defaults); each row is
  // guarded by a session-level advisory lock, pg_advisory_lock(<key>, id),
  // that the engine holds on a connection of its own for its whole life.
  // RegisterEngine runs one transaction that first takes a table lock (so
  // two opens are serialised), deletes every row whose advisory lock it can
  // take (pg_try_advisory_lock succeeds only when the owner's session is
  // gone: the row is stale), compares the defaults of the rows left, and
  // inserts its own. Destroying the registration deletes the row and
  // unlocks; a killed engine's session ends, its lock with it, and the next
  // open clears its row.
  virtual Result<std::unique_ptr<EngineRegistration>> RegisterEngine(
      const EngineDefaults& defaults) {
    (void)defaults;
    return Status::Unimplemented("this store keeps no registry of engines");
  }

  // Housekeeping outside any transaction (spec.md §1 "Space reclaim", G7):
  // returns up to `budget` units of space freed by deletes to the filesystem
  // (SQLite: free pages, incremental_vacuum), and does whatever periodic
  // upkeep the store needs that cannot run inside a transaction (LMDB
  // compaction, a VACUUM). The engine's maintenance pass calls it after its
  // transactions, never from inside a Run. Waits for the writer like Run
  // does, giving up on `options` (Cancelled, nothing done). Returns the units
  // reclaimed. Default: nothing to do, 0.
  virtual Result<int64_t> ReclaimSpace(const RunOptions& options, int64_t budget) {
    (void)options, (void)budget;
    return int64_t{0};
  }
};

// Forwards every call to a target, so tests can inject faults by overriding
// one method (LevelDB's EnvWrapper). Override WrapTxn to substitute a
// StoreTxnWrapper subclass for the transaction object the body sees.
class StoreTxnWrapper : public StoreTxn {
 public:
  explicit StoreTxnWrapper(StoreTxn* target) : target_(target) {}
  StoreTxn* target() const { return target_; }

  Result<QueueRecord> UpsertQueue(const QueueConfig& c, int64_t now, bool* created) override {
    return target_->UpsertQueue(c, now, created);
  }
  Result<QueueRecord> GetQueue(std::string_view name) override { return target_->GetQueue(name); }
  Result<std::vector<QueueRecord>> ListQueues() override { return target_->ListQueues(); }
  Status DeleteQueue(const QueueRecord& q) override { return target_->DeleteQueue(q); }
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override {
    return target_->Enqueue(q, items);
  }
  Status CancelScheduled(const QueueRecord& q, int64_t seq) override {
    return target_->CancelScheduled(q, seq);
  }
  Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& r) override {
    return target_->Claim(q, r);
  }
  Result<Message> ClaimDeferred(const QueueRecord& q, int64_t seq, const LockToken& t,
                                int64_t now, int64_t until) override {
    return target_->ClaimDeferred(q, seq, t, now, until);
  }
  Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& r) override {
    return target_->Settle(q, r);
  }
  // SettleMany is deliberately not forwarded: the default calls this
  // wrapper's Settle per request, so an override of Settle sees every item of
  // a batch too (a wrapper that wants the target's batch path forwards it).
  Result<std::vector<Message>> Peek(const QueueRecord& q, const PeekOptions& o) override {
    return target_->Peek(q, o);
  }
  Result<QueueStats> Stats(const QueueRecord& q, int64_t now) override {
    return target_->Stats(q, now);
  }
  Result<int64_t> Redrive(const QueueRecord& q, const QueueRecord& t, const RedriveOptions& o,
                          int64_t now) override {
    return target_->Redrive(q, t, o, now);
  }
  Result<int64_t> PurgeDeadLetters(const QueueRecord& q, const PurgeOptions& o,
                                   int64_t now) override {
    return target_->PurgeDeadLetters(q, o, now);
  }
  Status DeadLetterMessage(const QueueRecord& q, int64_t seq, std::string_view reason,
                           const std::optional<std::string>& description, int64_t now) override {
    return target_->DeadLetterMessage(q, seq, reason, description, now);
  }
  Status DeleteMessage(const QueueRecord& q, int64_t seq) override {
    return target_->DeleteMessage(q, seq);
  }
  Result<int64_t> PromoteDue(const QueueRecord& q, int64_t now, int64_t limit) override {
    return target_->PromoteDue(q, now, limit);
  }
  Result<int64_t> ReclaimLocks(const QueueRecord& q, int64_t now, bool all,
                               int64_t limit) override {
    return target_->ReclaimLocks(q, now, all, limit);
  }
  Result<int64_t> ExpireMessages(const QueueRecord& q, int64_t now, int64_t limit) override {
    return target_->ExpireMessages(q, now, limit);
  }
  Result<int64_t> EnforceRetention(const QueueRecord& q, const RetentionBounds& b, int64_t now,
                                   int64_t limit) override {
    return target_->EnforceRetention(q, b, now, limit);
  }
  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& q, std::string_view key,
                                               int64_t now) override {
    return target_->FindDedup(q, key, now);
  }
  Status PutDedup(const QueueRecord& q, std::string_view key, const DedupRecord& r) override {
    return target_->PutDedup(q, key, r);
  }
  Result<bool> FindReceipt(std::string_view key, int64_t now) override {
    return target_->FindReceipt(key, now);
  }
  Status PutReceipt(std::string_view key, int64_t expires_at) override {
    return target_->PutReceipt(key, expires_at);
  }
  Result<std::optional<AttemptRecord>> FindAttempt(std::string_view id, int64_t now) override {
    return target_->FindAttempt(id, now);
  }
  Status PutAttempt(std::string_view id, const AttemptRecord& r) override {
    return target_->PutAttempt(id, r);
  }
  Result<int64_t> DropExpiredRecords(int64_t now, int64_t limit) override {
    return target_->DropExpiredRecords(now, limit);
  }
  Status CheckNativeTxnOpen() override { return target_->CheckNativeTxnOpen(); }
  // Runs the savepoint on the target, presenting *this* wrapper to the body so
  // overrides stay in effect inside it.
  Status Savepoint(const std::function<Status(StoreTxn&)>& body) override {
    return target_->Savepoint([&](StoreTxn&) { return body(*this); });
  }
  void* NativeHandle() override { return target_->NativeHandle(); }
  void FinalCallFollows() override { target_->FinalCallFollows(); }

 private:
  StoreTxn* target_;
};

class StoreWrapper : public Store {
 public:
  explicit StoreWrapper(std::unique_ptr<Store> target) : target_(std::move(target)) {}
  Store* target() const { return target_.get(); }

  StoreCapabilities Capabilities() const override { return target_->Capabilities(); }
  Result<std::unique_ptr<ChangeSubscription>> Subscribe(ChangeCallback on_change) override {
    return target_->Subscribe(std::move(on_change));
  }
  Result<int64_t> ReclaimSpace(const RunOptions& options, int64_t budget) override {
    return target_->ReclaimSpace(options, budget);
  }
  Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t queue_id) override {
    return target_->TryLockMaintenance(queue_id);
  }
  Result<std::unique_ptr<EngineRegistration>> RegisterEngine(
      const EngineDefaults& defaults) override {
    return target_->RegisterEngine(defaults);
  }
  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    return target_->Run(kind, options, [&](StoreTxn& inner) {
      std::unique_ptr<StoreTxn> wrapped = WrapTxn(&inner);
      return body(*wrapped);
    });
  }

 protected:
  // Returns the transaction object the engine's body sees. Default: a plain
  // forwarding StoreTxnWrapper.
  virtual std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) {
    return std::make_unique<StoreTxnWrapper>(inner);
  }

 private:
  std::unique_ptr<Store> target_;
};

}  // namespace mqlite

#endif  // MQLITE_STORE_H_
