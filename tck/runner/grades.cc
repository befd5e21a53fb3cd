#include "grades.h"

#include <algorithm>
#include <cctype>

namespace mqlite::tck {
namespace {

bool Has(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return std::tolower(a) == std::tolower(b); });
  return it != haystack.end();
}

void Add(std::vector<std::string>* out, const char* g) {
  if (std::find(out->begin(), out->end(), g) == out->end()) out->push_back(g);
}

}  // namespace

const std::vector<Guarantee>& Guarantees() {
  static const auto* g = new std::vector<Guarantee>{
      {"G1", "durable ordered enqueue: strictly increasing, never-reused seq", true},
      {"G2", "atomic claim: select and lock are one step; exactly one claimer wins", true},
      {"G3", "ordered per-state and per-group lookup in O(log n)", true},
      {"G4", "secondary lookups: dedup keys, DLQ scans, expiry by deadline, receipts", true},
      {"G5", "multi-operation ACID transactions the application can join (outbox)", true},
      {"G6", "recovery from data alone: locks are rows, a crash leaves a consistent state", true},
      {"G7", "space reclaimed after deletes; retention bounds hold", true},
      {"G8", "embeddable: no server, one file or directory to copy (graded, not required)", false},
      {"PIN", "the store's own performance pins (SPEC §11)", true},
  };
  return *g;
}

std::vector<std::string> GuaranteesOf(std::string_view suite, std::string_view test) {
  std::vector<std::string> g;
  // Suite-level: what the whole suite exercises.
  if (suite == "TckOrdering") {
    Add(&g, "G2");
    Add(&g, "G3");
  } else if (suite == "TckIdempotency") {
    Add(&g, "G4");
  } else if (suite == "TckTransactions") {
    Add(&g, "G5");
  } else if (suite == "TckConcurrency") {
    Add(&g, "G2");
  } else if (suite == "TckModel") {
    // The model compares every field after every step: seqs, claims, DLQ,
    // TTL, receipts, attempts, reopen.
    for (const char* x : {"G1", "G2", "G3", "G4", "G6"}) Add(&g, x);
  } else if (suite == "TckIntegrity") {
    Add(&g, "G1");
    Add(&g, "G2");
  } else if (suite == "TckCrash") {
    Add(&g, "G1");
    Add(&g, "G5");
    Add(&g, "G6");
  } else if (suite == "TckPins") {
    Add(&g, "PIN");
    Add(&g, "G3");
  } else if (suite == "TckSpace") {
    Add(&g, "G7");
  }
  // Test-level: keywords in the test name.
  if (Has(test, "Seq") || Has(test, "Spec3_Send") || Has(test, "Reuse")) Add(&g, "G1");
  if (Has(test, "Claim") || Has(test, "Receive") || Has(test, "Fenc") || Has(test, "Token") ||
      Has(test, "Settle") || Has(test, "Complete") || Has(test, "LockLost")) {
    Add(&g, "G2");
  }
  if (Has(test, "Group") || Has(test, "Priority") || Has(test, "Order") || Has(test, "Peek") ||
      Has(test, "Fifo")) {
    Add(&g, "G3");
  }
  if (Has(test, "Dedup") || Has(test, "Receipt") || Has(test, "Attempt") || Has(test, "Dlq") ||
      Has(test, "DeadLetter") || Has(test, "Redrive") || Has(test, "Purge") || Has(test, "Ttl") ||
      Has(test, "Expir") || Has(test, "Deferred")) {
    Add(&g, "G4");
  }
  if (Has(test, "Tx") || Has(test, "Outbox") || Has(test, "Rollback") || Has(test, "Atomic")) {
    Add(&g, "G5");
  }
  if (Has(test, "Recover") || Has(test, "Reopen") || Has(test, "Crash") || Has(test, "Kill") ||
      Has(test, "Lease") || Has(test, "DbLocked")) {
    Add(&g, "G6");
  }
  if (Has(test, "PerformancePins")) {
    Add(&g, "PIN");
    Add(&g, "G3");
  }
  if (Has(test, "Retention") || Has(test, "Space") || Has(test, "Reclaim") || Has(test, "Purge")) {
    Add(&g, "G7");
  }
  if (g.empty()) Add(&g, "G2");  // the general lifecycle: claim and settle semantics
  return g;
}

}  // namespace mqlite::tck
