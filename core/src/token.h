// Lock-token generation from the OS CSPRNG (SPEC §1: 128 bits).
#ifndef MQLITE_CORE_SRC_TOKEN_H_
#define MQLITE_CORE_SRC_TOKEN_H_

#include <vector>

#include "mqlite/status.h"
#include "mqlite/types.h"

namespace mqlite::internal {

// Fills `out` with `n` fresh, non-empty tokens. Unavailable if the kernel
// refuses randomness (never silently falls back to a weak generator).
Status NewTokens(size_t n, std::vector<LockToken>* out);

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_TOKEN_H_
