// The rerun harness (spec.md §1, §9: "a re-run body must not double-count").
//
// A store may run a rerunnable body more than once — LMDB grows its map and
// starts the transaction again, PostgreSQL retries a serialization failure —
// and the engine itself re-runs group-commit members in savepoints. The
// harness makes that happen on every rerunnable body: it runs the body inside
// a Savepoint, rolls it back whatever it returned, and runs it again in the
// same transaction; the second run is the one that counts. A body that keeps
// state across attempts (appends to an output twice, counts twice, reuses a
// consumed value) makes some kit test fail under the harness.
#include <memory>
#include <utility>

#include "mqlite/tck.h"

namespace mqlite::tck {
namespace {

// Returned by a successful first attempt so the Savepoint undoes it; never
// escapes the harness.
constexpr std::string_view kRerunMarker = "tck rerun harness: first attempt rolled back";

class RerunStore final : public StoreWrapper {
 public:
  explicit RerunStore(std::unique_ptr<Store> target) : StoreWrapper(std::move(target)) {}

  Status Run(TxnKind kind, const RunOptions& options,
             const std::function<Status(StoreTxn&)>& body) override {
    if (!options.rerunnable) return StoreWrapper::Run(kind, options, body);
    return StoreWrapper::Run(kind, options, [&](StoreTxn& txn) -> Status {
      Status first = txn.Savepoint([&](StoreTxn& inner) -> Status {
        Status s = body(inner);
        if (!s.ok()) return s;
        return Status::Internal(kRerunMarker);
      });
      // A body that failed is not re-run (a store re-runs only after its own
      // transient failures); its error rolls the whole Run back.
      if (first.code() != StatusCode::kInternal || first.message() != kRerunMarker) {
        return first;
      }
      return body(txn);
    });
  }
};

}  // namespace

StoreProfile WithRerun(StoreProfile base) {
  StoreProfile p = std::move(base);
  p.name += "_rerun";
  p.pins.clear();  // pins count steps of one attempt; the harness doubles them
  auto previous = p.wrap;
  p.wrap = [previous](std::unique_ptr<Store> s) -> std::unique_ptr<Store> {
    if (previous) s = previous(std::move(s));
    return std::make_unique<RerunStore>(std::move(s));
  };
  return p;
}

}  // namespace mqlite::tck
