// Per-call helpers shared by the engine's parts: cancellation checks and the
// RunOptions a call's CallOptions turn into (SPEC §10).
#ifndef MQLITE_CORE_SRC_CALL_H_
#define MQLITE_CORE_SRC_CALL_H_

#include <chrono>
#include <string>
#include <string_view>

#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite::internal {

// Cancelled if `call`'s stop token is set or its deadline has passed.
inline Status CheckCancelled(const CallOptions& call, std::string_view what) {
  if (call.stop_token.stop_requested()) {
    return Status::Cancelled(std::string(what) + ": stop requested");
  }
  if (std::chrono::steady_clock::now() >= call.deadline) {
    return Status::Cancelled(std::string(what) + ": deadline passed");
  }
  return Status::OK();
}

inline RunOptions ToRunOptions(const CallOptions& call, bool rerunnable = true) {
  RunOptions o;
  o.rerunnable = rerunnable;
  o.stop = call.stop_token;
  o.deadline = call.deadline;
  return o;
}

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_CALL_H_
