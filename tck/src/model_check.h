// Model-based checking (SPEC §12): a reference model of the SPEC in plain C++,
// driven by random operation sequences — sends, claims, settles with right,
// wrong and stale tokens, replays, receive attempts, deferral, cancellation,
// clock jumps, maintenance, DLQ redrive/purge and reopen — and compared with
// an engine after every step (the operation's result and every queue's full
// contents via Peek and Stats).
//
// The model predicts exact results, including which messages a Receive claims
// and in which order. It learns only what a store may choose: seq values
// (checked to be strictly increasing and never reused) and lock tokens.
#ifndef MQLITE_TCK_SRC_MODEL_CHECK_H_
#define MQLITE_TCK_SRC_MODEL_CHECK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mqlite/clock.h"
#include "mqlite/engine.h"

namespace mqlite::tck {

// Opens an engine on the store under test. Called once at the start and again
// after each simulated reopen; the store must keep its data across calls (the
// previous engine is closed first). The engine must use `clock`,
// background_maintenance = false and otherwise default EngineOptions (the
// model assumes the default receipt/attempt retention and DLQ bounds).
using EngineFactory = std::function<Result<std::unique_ptr<Engine>>(Clock* clock)>;

struct ModelCheckOptions {
  uint64_t seed = 1;
  int steps = 400;
  // Reopen is part of the random mix. Exclusive stores reclaim every lock at
  // open (SPEC §7.1); shared ones only expired leases.
  bool reopen = true;
  bool exclusive = true;
};

// Empty on success; otherwise a description of the first divergence, naming
// the seed, the step and the operation history tail.
std::string RunModelCheck(const EngineFactory& factory, const ModelCheckOptions& options);

}  // namespace mqlite::tck

#endif  // MQLITE_TCK_SRC_MODEL_CHECK_H_
