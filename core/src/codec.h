// Binary encoding of a claimed batch for receive-attempt records (SPEC §7.3).
// Length-prefixed fields, a version byte first; decoding validates every
// length and reports Corruption instead of reading past the end.
#ifndef MQLITE_CORE_SRC_CODEC_H_
#define MQLITE_CORE_SRC_CODEC_H_

#include <string>
#include <vector>

#include "mqlite/status.h"
#include "mqlite/types.h"

namespace mqlite::internal {

std::string EncodeMessages(const std::vector<Message>& messages);
Result<std::vector<Message>> DecodeMessages(std::string_view data);

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_CODEC_H_
