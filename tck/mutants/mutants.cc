#include "mutants.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace mqlite::tck {
namespace {

// Finds the locked row `seq` of `queue` through the boundary (Peek), as a
// broken store might "know" it.
std::optional<Message> LockedRow(StoreTxn& t, const QueueRecord& q, int64_t seq) {
  PeekOptions o;
  o.state = MessageState::kLocked;
  o.from_seq = seq - 1;
  o.max_messages = 1;
  auto r = t.Peek(q, o);
  if (!r.ok() || r->empty() || r->front().seq != seq) return std::nullopt;
  return r->front();
}

// A StoreWrapper whose transactions are a given StoreTxnWrapper subclass,
// sharing one state object for the life of the store.
template <typename Txn, typename SharedState = int>
class MutantStore : public StoreWrapper {
 public:
  explicit MutantStore(std::unique_ptr<Store> target) : StoreWrapper(std::move(target)) {}

 protected:
  std::unique_ptr<StoreTxn> WrapTxn(StoreTxn* inner) override {
    return std::make_unique<Txn>(inner, &state_);
  }

 private:
  SharedState state_{};
};

// Wraps every store the profile opens in a `S` (a StoreWrapper subclass).
template <typename S>
void WrapStoreWith(StoreProfile* p) {
  auto previous = p->wrap;
  p->wrap = [previous](std::unique_ptr<Store> s) -> std::unique_ptr<Store> {
    if (previous) s = previous(std::move(s));
    return std::make_unique<S>(std::move(s));
  };
}

template <typename Txn, typename SharedState = int>
void WrapWith(StoreProfile* p) {
  WrapStoreWith<MutantStore<Txn, SharedState>>(p);
}

// ---- The mutants --------------------------------------------------------------

// SPEC §6: a settle must present the current token.
struct IgnoreTokenTxn : StoreTxnWrapper {
  IgnoreTokenTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& r) override {
    SettleRequest x = r;
    if (auto row = LockedRow(*target(), q, r.seq)) x.token = row->lock_token;
    return StoreTxnWrapper::Settle(q, x);
  }
};

// SPEC §6: locked_until > now, whether or not maintenance ran.
struct IgnoreLeaseTxn : StoreTxnWrapper {
  IgnoreLeaseTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& r) override {
    SettleRequest x = r;
    if (auto row = LockedRow(*target(), q, r.seq); row && row->locked_until <= r.now) {
      x.now = row->locked_until - 1;
    }
    return StoreTxnWrapper::Settle(q, x);
  }
};

// SPEC §7.2: a receipt vouches only for the identical request.
struct AnyReceiptTxn : StoreTxnWrapper {
  AnyReceiptTxn(StoreTxn* t, bool* any) : StoreTxnWrapper(t), any_(any) {}
  Status PutReceipt(std::string_view key, int64_t expires_at) override {
    *any_ = true;
    return StoreTxnWrapper::PutReceipt(key, expires_at);
  }
  // A settle records its receipt inside the store (SettleRequest::receipt_key).
  Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& r) override {
    auto s = StoreTxnWrapper::Settle(q, r);
    if (s.ok() && !r.receipt_key.empty()) *any_ = true;
    return s;
  }
  Result<bool> FindReceipt(std::string_view key, int64_t now) override {
    auto r = StoreTxnWrapper::FindReceipt(key, now);
    if (r.ok() && !*r && *any_) return true;
    return r;
  }
  bool* any_;
};

// SPEC §5: group order (every message treated as ungrouped).
struct NoGroupsTxn : StoreTxnWrapper {
  NoGroupsTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override {
    std::vector<EnqueueItem> x(items.begin(), items.end());
    for (auto& i : x) i.group_key.reset();
    return StoreTxnWrapper::Enqueue(q, x);
  }
};

// SPEC §5 / G2: exactly one claimer wins. This store hands the last claimed
// message again to a caller who would otherwise get nothing.
struct DupState {
  std::mutex mu;
  std::optional<Message> last;
};
struct DuplicateClaimTxn : StoreTxnWrapper {
  DuplicateClaimTxn(StoreTxn* t, DupState* s) : StoreTxnWrapper(t), s_(s) {}
  Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& r) override {
    auto got = StoreTxnWrapper::Claim(q, r);
    if (!got.ok() || r.mode != ReceiveMode::kPeekLock) return got;
    std::lock_guard<std::mutex> l(s_->mu);
    if (!got->empty()) {
      s_->last = got->back();
    } else if (s_->last && s_->last->queue == q.config.name) {
      got->push_back(*s_->last);
    }
    return got;
  }
  DupState* s_;
};

// SPEC §7.4: the delivery count moves inside the claim.
struct NoDeliveryCountTxn : StoreTxnWrapper {
  NoDeliveryCountTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<std::vector<Message>> Claim(const QueueRecord& q, const ClaimRequest& r) override {
    auto got = StoreTxnWrapper::Claim(q, r);
    if (got.ok()) {
      for (auto& m : *got) m.delivery_count -= 1;
    }
    return got;
  }
};

// SPEC §3: TTL.
struct NoTtlTxn : StoreTxnWrapper {
  NoTtlTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override {
    std::vector<EnqueueItem> x(items.begin(), items.end());
    for (auto& i : x) i.expires_at = 0;
    return StoreTxnWrapper::Enqueue(q, x);
  }
};

// SPEC §7.5: every acknowledged send is eventually delivered. This store
// parks every fifth message a year in the future: acknowledged, never seen.
struct HiddenSendTxn : StoreTxnWrapper {
  HiddenSendTxn(StoreTxn* t, int* n) : StoreTxnWrapper(t), n_(n) {}
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override {
    std::vector<EnqueueItem> x(items.begin(), items.end());
    for (auto& i : x) {
      if (++*n_ % 5 == 0) {
        i.state = MessageState::kScheduled;
        i.visible_at = i.enqueued_at + 365LL * 24 * 3600 * 1000;
        i.expires_at = 0;
      }
    }
    return StoreTxnWrapper::Enqueue(q, x);
  }
  int* n_;
};

// SPEC §4: a conflicting resend must never replace the original.
struct DedupOverwriteTxn : StoreTxnWrapper {
  DedupOverwriteTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord&, std::string_view,
                                               int64_t) override {
    return std::optional<DedupRecord>();
  }
};

// SPEC §6: RenewBatch never revives an expired lease.
struct ReviveLeaseTxn : StoreTxnWrapper {
  ReviveLeaseTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<SettleResult> Settle(const QueueRecord& q, const SettleRequest& r) override {
    SettleRequest x = r;
    if (x.op == SettleOp::kRenew) x.now = 0;
    return StoreTxnWrapper::Settle(q, x);
  }
};

// SPEC §7.1: an exclusive store reclaims every orphaned lock at open.
struct NoRecoveryTxn : StoreTxnWrapper {
  NoRecoveryTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<int64_t> ReclaimLocks(const QueueRecord& q, int64_t now, bool all,
                               int64_t limit) override {
    if (all) return int64_t{0};
    return StoreTxnWrapper::ReclaimLocks(q, now, all, limit);
  }
};

// SPEC §6: retention bounds hold.
struct NoRetentionTxn : StoreTxnWrapper {
  NoRetentionTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<int64_t> EnforceRetention(const QueueRecord&, const RetentionBounds&, int64_t,
                                   int64_t) override {
    return int64_t{0};
  }
};

// ---- Mutants of a shared store (spec.md §9 "Shared stores") -------------------
//
// Each engine of a multi-engine test opens its own Store object, so these
// wrappers keep per-engine state: they model a shared store in which one
// engine does not see (or lock against) what another engine is doing. A
// single-engine run cannot catch them; the TckMultiEngine suite must. They run
// on the shared mode of the in-memory store (`--store memory:shared`).

// FindDedup and FindAttempt take no lock, so two engines both miss the same
// key and both send (or both claim). Modelled as: each engine sees only the
// idempotency records it wrote itself.
struct OwnRecords {
  std::mutex mu;
  std::set<std::pair<int64_t, std::string>> dedup;  // (queue id, key)
  std::set<std::string> attempts;
};
struct UnlockedKeysTxn : StoreTxnWrapper {
  UnlockedKeysTxn(StoreTxn* t, OwnRecords* own) : StoreTxnWrapper(t), own_(own) {}
  Result<std::optional<DedupRecord>> FindDedup(const QueueRecord& q, std::string_view key,
                                               int64_t now) override {
    auto r = StoreTxnWrapper::FindDedup(q, key, now);
    std::lock_guard<std::mutex> l(own_->mu);
    if (r.ok() && r->has_value() && !own_->dedup.count({q.id, std::string(key)})) {
      return std::optional<DedupRecord>();
    }
    return r;
  }
  Status PutDedup(const QueueRecord& q, std::string_view key, const DedupRecord& d) override {
    {
      std::lock_guard<std::mutex> l(own_->mu);
      own_->dedup.insert({q.id, std::string(key)});
    }
    return StoreTxnWrapper::PutDedup(q, key, d);
  }
  Result<std::optional<AttemptRecord>> FindAttempt(std::string_view id, int64_t now) override {
    auto r = StoreTxnWrapper::FindAttempt(id, now);
    std::lock_guard<std::mutex> l(own_->mu);
    if (r.ok() && r->has_value() && !own_->attempts.count(std::string(id))) {
      return std::optional<AttemptRecord>();
    }
    return r;
  }
  Status PutAttempt(std::string_view id, const AttemptRecord& a) override {
    {
      std::lock_guard<std::mutex> l(own_->mu);
      own_->attempts.insert(std::string(id));
    }
    return StoreTxnWrapper::PutAttempt(id, a);
  }
  OwnRecords* own_;
};

// Reclaim treats every lease as expired: an engine's maintenance (or its
// open) takes messages another engine holds under a live lease.
struct ReclaimIgnoresLeaseTxn : StoreTxnWrapper {
  ReclaimIgnoresLeaseTxn(StoreTxn* t, int*) : StoreTxnWrapper(t) {}
  Result<int64_t> ReclaimLocks(const QueueRecord& q, int64_t now, bool, int64_t limit) override {
    return StoreTxnWrapper::ReclaimLocks(q, now, /*all=*/true, limit);
  }
};

// Group membership is not serialised across engines: a send does not see
// the members another engine sent, so sends from two engines both become
// heads of "one" group and a claim takes a member whose group is busy.
// Modelled as: each engine's group keys are its own.
struct EngineTag {
  char unused = 0;
};
struct UnserialisedGroupsTxn : StoreTxnWrapper {
  UnserialisedGroupsTxn(StoreTxn* t, EngineTag* tag) : StoreTxnWrapper(t), tag_(tag) {}
  Result<std::vector<int64_t>> Enqueue(const QueueRecord& q,
                                       std::span<const EnqueueItem> items) override {
    std::vector<EnqueueItem> x(items.begin(), items.end());
    const std::string mine = "\x1f" + std::to_string(reinterpret_cast<uintptr_t>(tag_));
    for (auto& i : x) {
      if (i.group_key) *i.group_key += mine;
    }
    return StoreTxnWrapper::Enqueue(q, x);
  }
  EngineTag* tag_;
};

// The maintenance try-lock excludes nobody: every engine is granted every
// queue's lock, so engines sharing the store all maintain every queue at
// once, and a queue another engine is maintaining is never skipped.
struct NoLock final : MaintenanceLock {};
class EveryLockGrantedStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<std::unique_ptr<MaintenanceLock>> TryLockMaintenance(int64_t) override {
    return std::unique_ptr<MaintenanceLock>(std::make_unique<NoLock>());
  }
};

// The registry of engines admits anyone: an engine whose retention defaults
// differ from a live engine's opens, and the two trim one DLQ by different
// bounds.
struct NoRegistration final : EngineRegistration {};
class AnyDefaultsAdmittedStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<std::unique_ptr<EngineRegistration>> RegisterEngine(const EngineDefaults&) override {
    return std::unique_ptr<EngineRegistration>(std::make_unique<NoRegistration>());
  }
};

// SPEC §8: the business write and the enqueue commit together. This profile's
// business writes silently go nowhere.
void DropBusinessWrites(StoreProfile* p) {
  if (!p->business) return;
  p->business->put = [](void*, std::string_view, std::string_view) { return Status::OK(); };
}

}  // namespace

const std::vector<Mutant>& Mutants() {
  static const auto* m = new std::vector<Mutant>{
      {"settle-ignores-token", "a settle succeeds with any token (SPEC §6)",
       WrapWith<IgnoreTokenTxn>},
      {"settle-ignores-lease-expiry", "a settle succeeds after the lease expired (SPEC §6)",
       WrapWith<IgnoreLeaseTxn>},
      {"receipt-replays-any-request",
       "any live receipt vouches for any failed settle (SPEC §7.2)",
       WrapWith<AnyReceiptTxn, bool>},
      {"claim-ignores-group-order", "group_id is not enforced (SPEC §5)", WrapWith<NoGroupsTxn>},
      {"claim-hands-message-twice",
       "an empty claim returns the last message claimed by someone else (SPEC §5, G2)",
       WrapWith<DuplicateClaimTxn, DupState>},
      {"delivery-count-not-incremented", "claims report the count before the delivery (SPEC §7.4)",
       WrapWith<NoDeliveryCountTxn>},
      {"ttl-ignored", "messages never expire (SPEC §3)", WrapWith<NoTtlTxn>},
      {"send-acknowledged-not-delivered",
       "every fifth acknowledged send is never deliverable (SPEC §7.5)",
       WrapWith<HiddenSendTxn>},
      {"dedup-overwrites-on-conflict",
       "dedup records are never found, so resends replace and duplicate (SPEC §4)",
       WrapWith<DedupOverwriteTxn>},
      {"renew-revives-expired-lease", "Renew extends an expired lease (SPEC §6)",
       WrapWith<ReviveLeaseTxn>},
      {"recovery-skipped", "orphaned locks are not reclaimed at open (SPEC §7.1)",
       WrapWith<NoRecoveryTxn>},
      {"retention-ignored", "DLQ retention bounds are never enforced (SPEC §6)",
       WrapWith<NoRetentionTxn>},
      {"tx-drops-business-write",
       "Tx commits the enqueue but not the business write (SPEC §8)", DropBusinessWrites},
      // Shared-store mutants: run with --store memory:shared (see above).
      {"idempotency-keys-unlocked",
       "FindDedup/FindAttempt take no lock: engines never see each other's keys (spec.md §9)",
       WrapWith<UnlockedKeysTxn, OwnRecords>},
      {"reclaim-ignores-lease",
       "ReclaimLocks takes live leases too, so one engine steals another's (spec.md §7.1)",
       WrapWith<ReclaimIgnoresLeaseTxn>},
      {"group-membership-unserialised",
       "sends from two engines both become heads of one group (spec.md §9)",
       WrapWith<UnserialisedGroupsTxn, EngineTag>},
      {"maintenance-lock-always-granted",
       "every engine gets every queue's maintenance lock at once (spec.md §9)",
       WrapStoreWith<EveryLockGrantedStore>},
      {"retention-defaults-unchecked",
       "an engine with other DLQ retention defaults than a live engine opens (spec.md §9)",
       WrapStoreWith<AnyDefaultsAdmittedStore>},
  };
  return *m;
}

const Mutant* FindMutant(std::string_view name) {
  for (const Mutant& m : Mutants()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

}  // namespace mqlite::tck
