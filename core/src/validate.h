// Argument validation and limits (SPEC §2, §4, §5, §6). One place for every
// rule, so error codes and messages are the same whichever call hits them.
#ifndef MQLITE_CORE_SRC_VALIDATE_H_
#define MQLITE_CORE_SRC_VALIDATE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "mqlite/engine.h"
#include "mqlite/status.h"
#include "mqlite/store.h"
#include "mqlite/types.h"

namespace mqlite::internal {

inline constexpr int64_t kMinLockMs = 1'000;
inline constexpr int64_t kMaxLockMs = 12LL * 3600 * 1000;
inline constexpr int32_t kMaxDeliveryLimit = 1'000;
inline constexpr size_t kMaxIdBytes = 128;
inline constexpr size_t kMaxTextBytes = 1'024;  // subject, content_type, reject description
inline constexpr size_t kMaxProperties = 64;
inline constexpr size_t kMaxPropertyKeyBytes = 128;
inline constexpr size_t kMaxPropertyValueBytes = 4'096;
inline constexpr int kMaxReceive = 256;
inline constexpr int64_t kMaxWaitMs = 20'000;
inline constexpr size_t kMaxSettleBatch = 512;
inline constexpr int kMaxPeek = 1'000;
inline constexpr int64_t kMaxDelayMs = 365LL * 24 * 3600 * 1000;  // delay, schedule horizon
inline constexpr int64_t kMaxTtlMs = 100LL * 365 * 24 * 3600 * 1000;
inline constexpr int64_t kMaxMessageBytesLimit = 256LL << 20;
// The engine reads its clock saturated to [0, kMaxClockMs] (year ~146
// million): now + any duration validated here stays far from INT64_MAX.
inline constexpr int64_t kMaxClockMs = int64_t{1} << 62;
// EngineOptions ranges (engine.h).
inline constexpr int64_t kMaxMaintenanceIntervalMs = 24LL * 3600 * 1000;
inline constexpr int64_t kMaxMaintenanceBatch = 1'000'000;
inline constexpr int kMaxSendBatchLimit = 100'000;
inline constexpr int kMaxGroupCommit = 4'096;

// "queue 'name'" — the prefix every message about a queue starts with.
std::string QueueLabel(std::string_view name);

Status ValidateQueueName(std::string_view name);
Status ValidateQueueConfig(const QueueConfig& config);
Status ValidateReceive(std::string_view queue, const ReceiveOptions& options);
Status ValidateSeq(std::string_view queue, int64_t seq);
Status ValidateToken(std::string_view queue, int64_t seq, const LockToken& token);
Status ValidatePeek(std::string_view queue, const PeekOptions& options);
// Reject's and DeadLetterMessage's reason (1–128 bytes) and description
// (≤ 1024 bytes).
Status ValidateDeadLetterReason(std::string_view queue, int64_t seq, std::string_view reason,
                                std::string_view description);
Status ValidateEngineOptions(const EngineOptions& options);
// A send batch: 1 – options.max_send_batch messages.
Status ValidateSendBatch(std::string_view queue, size_t count, const EngineOptions& options);
// CompleteBatch / RenewBatch: 1 – kMaxSettleBatch items.
Status ValidateSettleBatch(std::string_view queue, size_t count);
// ReceiveDeferred: 1 – kMaxReceive valid, distinct seqs.
Status ValidateDeferredSeqs(std::string_view queue, std::span<const int64_t> seqs);
// Abandon's delay: 0 – kMaxDelayMs.
Status ValidateAbandonDelay(std::string_view queue, int64_t seq, int64_t delay_ms);
// Redrive / Purge selection: max_messages and older_than_ms not negative.
Status ValidateDlqSelection(std::string_view queue, std::string_view what, int64_t max_messages,
                            int64_t older_than_ms);

// Validates `m` for `queue` and fills `item` (times, state, group key).
// `slot` is the message's index in its batch, named in error messages.
Status BuildEnqueueItem(const QueueRecord& queue, const EngineOptions& engine,
                        const OutgoingMessage& m, size_t slot, int64_t now, EnqueueItem* item);

// Resolves a queue's DLQ retention against the engine defaults (SPEC §2).
RetentionBounds ResolveRetention(const QueueConfig& config, const EngineOptions& engine);
// The defaults an engine registers with a shared store (spec.md §9): its
// retention defaults resolved as a queue that sets none would see them, so
// "unbounded" is one value however it was spelled.
EngineDefaults EngineDefaultsOf(const EngineOptions& engine);

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_VALIDATE_H_
