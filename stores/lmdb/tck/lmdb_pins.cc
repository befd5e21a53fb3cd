#include "lmdb_pins.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mqlite/clock.h"
#include "mqlite/engine.h"
#include "probe.h"

namespace mqlite::tck {
namespace {

using lmdb_internal::Probe;
using lmdb_internal::ProbeOf;

constexpr int64_t kT0 = 1'700'000'000'000;

struct Opened {
  std::unique_ptr<Engine> engine;
  Probe* probe = nullptr;
  std::string error;
};

Opened OpenEngine(StoreFixture& fixture, ManualClock* clock) {
  Opened o;
  auto store = fixture.Open();
  if (!store) {
    o.error = "open: " + store.status().ToString();
    return o;
  }
  o.probe = ProbeOf(store->get());
  if (o.probe == nullptr) {
    o.error = "the fixture's store is not an LMDB store";
    return o;
  }
  EngineOptions options;
  options.clock = clock;
  options.background_maintenance = false;
  auto engine = Engine::Open(std::move(*store), options);
  if (!engine) {
    o.error = "Engine::Open: " + engine.status().ToString();
    return o;
  }
  o.engine = std::move(*engine);
  return o;
}

// SendBatch in chunks of the engine's batch limit.
Status SendMany(Engine& e, const std::string& queue, const OutgoingMessage& m, int n) {
  for (int sent = 0; sent < n;) {
    const int chunk = std::min(1'000, n - sent);
    std::vector<OutgoingMessage> batch(static_cast<size_t>(chunk), m);
    auto r = e.SendBatch(queue, batch);
    if (!r.ok()) return r.status();
    sent += chunk;
  }
  return Status::OK();
}

std::string Check(bool ok, const std::string& what) { return ok ? "" : what + "\n"; }

}  // namespace

std::string LmdbPinClaimIndependentOfBacklog(StoreFixture& fixture) {
  ManualClock clock(kT0);
  Opened o = OpenEngine(fixture, &clock);
  if (!o.engine) return o.error;
  int64_t steps[2] = {0, 0};
  const int backlogs[2] = {50, 20'000};
  for (int i = 0; i < 2; ++i) {
    const std::string q = "pin_backlog_" + std::to_string(backlogs[i]);
    if (Status s = o.engine->CreateQueue({.name = q}).status(); !s.ok()) return s.ToString();
    if (Status s = SendMany(*o.engine, q, {.body = "x"}, backlogs[i]); !s.ok()) {
      return s.ToString();
    }
    o.probe->claim_steps = 0;
    auto got = o.engine->Receive(q, {.max_messages = 10});
    if (!got.ok() || got->size() != 10) return "Receive of 10 did not return 10 messages";
    steps[i] = o.probe->claim_steps;
  }
  return Check(steps[0] == steps[1] && steps[1] <= 10,
               "claim of 10: " + std::to_string(steps[0]) + " cursor steps behind 50 messages, " +
                   std::to_string(steps[1]) + " behind 20,000 (want equal and ≤ 10)");
}

std::string LmdbPinClaimSkipsBlockedGroup(StoreFixture& fixture) {
  ManualClock clock(kT0);
  Opened o = OpenEngine(fixture, &clock);
  if (!o.engine) return o.error;
  std::string out;
  for (Ordering ordering : {Ordering::kStandard, Ordering::kStrictFifo}) {
    const std::string q = "pin_blocked_" + std::string(OrderingName(ordering));
    Engine& e = *o.engine;
    if (Status s = e.CreateQueue({.name = q, .ordering = ordering}).status(); !s.ok()) {
      return s.ToString();
    }
    if (Status s = e.Send(q, {.body = "head", .group_id = std::string("g")}).status(); !s.ok()) {
      return s.ToString();
    }
    auto head = e.Receive(q);
    if (!head.ok() || head->size() != 1) return "could not lock the group's head";
    if (Status s = SendMany(e, q, {.body = "x", .group_id = std::string("g"), .priority = 9},
                            20'000);
        !s.ok()) {
      return s.ToString();
    }
    if (ordering == Ordering::kStandard) {
      if (Status s = e.Send(q, {.body = "free"}).status(); !s.ok()) return s.ToString();
    }
    o.probe->claim_steps = 0;
    auto got = e.Receive(q, {.max_messages = 4});
    const size_t want = ordering == Ordering::kStandard ? 1 : 0;
    if (!got.ok() || got->size() != want) {
      out += std::string(OrderingName(ordering)) + ": Receive returned the wrong messages\n";
      continue;
    }
    const int64_t steps = o.probe->claim_steps;
    out += Check(steps <= 2, std::string(OrderingName(ordering)) + ": claim took " +
                                 std::to_string(steps) +
                                 " cursor steps behind a 20,000-member blocked group (want ≤ 2)");
  }
  return out;
}

std::string LmdbPinMaintenanceFollowsWhatIsDue(StoreFixture& fixture) {
  ManualClock clock(kT0);
  int64_t steps[2] = {0, 0};
  const int backlogs[2] = {10, 20'000};
  std::vector<std::string> queues;
  {
    Opened o = OpenEngine(fixture, &clock);
    if (!o.engine) return o.error;
    for (int backlog : backlogs) {
      const std::string q = "pin_due_" + std::to_string(backlog);
      queues.push_back(q);
      if (Status s = o.engine->CreateQueue({.name = q}).status(); !s.ok()) return s.ToString();
      if (Status s = SendMany(*o.engine, q, {.body = "x", .delay_ms = 3'600'000}, backlog);
          !s.ok()) {
        return s.ToString();
      }
      if (Status s = o.engine->Send(q, {.body = "soon", .delay_ms = 1'000}).status(); !s.ok()) {
        return s.ToString();
      }
    }
  }
  // One maintenance step, PromoteDue, straight on the store.
  auto store = fixture.Open();
  if (!store) return "reopen: " + store.status().ToString();
  Probe* probe = ProbeOf(store->get());
  for (int i = 0; i < 2; ++i) {
    int64_t promoted = 0;
    probe->maintenance_steps = 0;
    Status s = (*store)->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
      MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.GetQueue(queues[i]));
      MQLITE_ASSIGN_OR_RETURN(promoted, txn.PromoteDue(q, kT0 + 2'000, 1'000));
      return Status::OK();
    });
    if (!s.ok()) return s.ToString();
    if (promoted != 1) return "PromoteDue promoted " + std::to_string(promoted) + ", want 1";
    steps[i] = probe->maintenance_steps;
  }
  return Check(steps[0] == steps[1] && steps[1] <= 2,
               "PromoteDue with one due: " + std::to_string(steps[0]) +
                   " cursor steps over 10 scheduled, " + std::to_string(steps[1]) +
                   " over 20,000 (want equal and ≤ 2)");
}

std::string LmdbPinDropExpiredRecords(StoreFixture& fixture) {
  auto store = fixture.Open();
  if (!store) return "open: " + store.status().ToString();
  Probe* probe = ProbeOf(store->get());
  if (probe == nullptr) return "the fixture's store is not an LMDB store";
  constexpr int kPerKind = 300;
  Status s = (*store)->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
    bool created = false;
    MQLITE_ASSIGN_OR_RETURN(QueueRecord q, txn.UpsertQueue({.name = "pin_records"}, kT0, &created));
    for (int i = 0; i < 2 * kPerKind; ++i) {
      // Half expired at kT0 + 1, half live for a day: the walk must stop at
      // the first live one.
      const int64_t exp = i % 2 == 0 ? kT0 + 1 : kT0 + 86'400'000;
      const std::string key = "k" + std::to_string(i);
      MQLITE_RETURN_IF_ERROR(txn.PutDedup(q, key, {.seq = i + 1, .body_hash = std::string(32, 'h'),
                                                   .expires_at = exp}));
      // A receipt key as the engine makes it: the seq big-endian, then 32 bytes.
      std::string receipt(8, '\0');
      const uint64_t seq = static_cast<uint64_t>(i) + 1;
      for (int b = 0; b < 8; ++b) receipt[b] = static_cast<char>((seq >> (56 - 8 * b)) & 0xff);
      receipt += std::string(32, 'r');
      MQLITE_RETURN_IF_ERROR(txn.PutReceipt(receipt, exp));
      MQLITE_RETURN_IF_ERROR(txn.PutAttempt(key, {.queue_id = q.id, .expires_at = exp}));
    }
    return Status::OK();
  });
  if (!s.ok()) return s.ToString();
  probe->maintenance_steps = 0;
  int64_t dropped = 0;
  s = (*store)->Run(TxnKind::kWrite, RunOptions{}, [&](StoreTxn& txn) -> Status {
    MQLITE_ASSIGN_OR_RETURN(dropped, txn.DropExpiredRecords(kT0 + 2, 100'000));
    return Status::OK();
  });
  if (!s.ok()) return s.ToString();
  const int64_t steps = probe->maintenance_steps;
  return Check(dropped == 3 * kPerKind && steps == dropped + 3,
               "DropExpiredRecords dropped " + std::to_string(dropped) + " (want " +
                   std::to_string(3 * kPerKind) + ") in " + std::to_string(steps) +
                   " cursor steps (want dropped + 1 per record kind)");
}

Status RunLmdbStepPins(StoreFixture& fixture) {
  std::string out;
  out += LmdbPinClaimIndependentOfBacklog(fixture);
  out += LmdbPinClaimSkipsBlockedGroup(fixture);
  out += LmdbPinMaintenanceFollowsWhatIsDue(fixture);
  out += LmdbPinDropExpiredRecords(fixture);
  if (out.empty()) return Status::OK();
  return Status::Internal("LMDB step pins:\n" + out);
}

}  // namespace mqlite::tck
