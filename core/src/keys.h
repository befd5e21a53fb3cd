// The opaque keys the engine hands stores for its idempotency records
// (SPEC §4 dedup, §7.2 receipts). One definition each, so every store and
// every engine version agree on them.
#ifndef MQLITE_CORE_SRC_KEYS_H_
#define MQLITE_CORE_SRC_KEYS_H_

#include <cstdint>
#include <string>

#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite::internal {

// SPEC §4: (queue, message_id), or (queue, SHA-256 of body) when the id is
// absent or empty ("i"/"h" prefixes keep the two key spaces apart; the store
// scopes the key to the queue).
std::string DedupKey(const OutgoingMessage& m);

// SPEC §7.2: a receipt is keyed by the whole request — queue, seq, token,
// operation and the arguments that change its effect. 40 bytes: the seq
// big-endian, then 32 bytes — a SHA-256 of the rest for Abandon and Reject
// (delay; reason and description), the rest itself for Complete and Defer.
std::string ReceiptKey(int64_t queue_id, const SettleRequest& r);

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_KEYS_H_
