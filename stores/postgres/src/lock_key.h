// Advisory lock keys of the PostgreSQL store (docs/postgres-store.md).
#ifndef MQLITE_STORES_POSTGRES_SRC_LOCK_KEY_H_
#define MQLITE_STORES_POSTGRES_SRC_LOCK_KEY_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mqlite::pg_internal {

// An advisory lock key: FNV-1a over (kind, schema, id, key). Kinds: 'g'
// group membership, 'd' dedup key, 'a' attempt id, 'm' queue maintenance,
// 'e' engine registration, 'w' a queue watched by a long-poll (the change
// feed's Listener). A collision (odds 2^-64 a pair) only serialises two
// unrelated things or sends a spurious wake-up; it never breaks one.
inline int64_t LockKey(char kind, std::string_view schema, int64_t id,
                       std::string_view key = {}) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  };
  mix(&kind, 1);
  mix(schema.data(), schema.size());
  mix("", 1);
  mix(&id, sizeof id);
  mix(key.data(), key.size());
  return static_cast<int64_t>(h);
}

}  // namespace mqlite::pg_internal

#endif  // MQLITE_STORES_POSTGRES_SRC_LOCK_KEY_H_
