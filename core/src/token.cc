#include "token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace mqlite::internal {

Status NewTokens(size_t n, std::vector<LockToken>* out) {
  out->assign(n, LockToken{});
  if (n == 0) return Status::OK();
  auto* p = reinterpret_cast<uint8_t*>(out->data());
  size_t want = n * sizeof(LockToken);
  static_assert(sizeof(LockToken) == 16);
  size_t got = 0;
  while (got < want) {
    ssize_t r = getrandom(p + got, want - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(std::string("getrandom failed: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(r);
  }
  // An all-zero token means "no token"; the odds are 2^-128, but be exact.
  for (LockToken& t : *out) {
    if (t.empty()) t.bytes[0] = 1;
  }
  return Status::OK();
}

}  // namespace mqlite::internal
