// JsonCodec<T>: a TypedQueue codec (mqlite/typed_queue.h) over nlohmann/json
// (Debian: nlohmann-json3-dev; CMake: find_package(nlohmann_json) and link
// nlohmann_json::nlohmann_json). mqlite itself does not need it: only code
// that includes this header does.
//
// T is converted the way nlohmann/json converts it: define to_json/from_json
// for your type, or use NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(T, fields...).
// Bodies are UTF-8 JSON text with content_type "application/json".
//
// Errors (never exceptions): Encode → InvalidArgument when the value has no
// JSON form (e.g. a std::string holding invalid UTF-8); Decode →
// InvalidArgument "invalid JSON payload: ..." for text that is not JSON or
// does not convert to T (a missing field, a wrong type). TypedQueue and
// TypedHandler dead-letter such a message with that message as the
// description.
#ifndef MQLITE_JSON_CODEC_H_
#define MQLITE_JSON_CODEC_H_

#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mqlite/status.h"

namespace mqlite {

template <typename T>
struct JsonCodec {
  std::string_view content_type() const { return "application/json"; }

  Result<std::string> Encode(const T& value) const {
    try {
      return nlohmann::json(value).dump();
    } catch (const std::exception& e) {  // nlohmann's, or a to_json of yours
      return Status::InvalidArgument(std::string("value has no JSON form: ") + e.what());
    }
  }

  Result<T> Decode(std::string_view body) const {
    try {
      return nlohmann::json::parse(body).template get<T>();
    } catch (const std::exception& e) {  // nlohmann's, or a from_json of yours
      return Status::InvalidArgument(std::string("invalid JSON payload: ") + e.what());
    }
  }
};

}  // namespace mqlite

#endif  // MQLITE_JSON_CODEC_H_
