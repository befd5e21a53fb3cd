// A small JSON writer for the CLI's --json output: objects written field by
// field into a string, strings escaped, byte strings that are not UTF-8
// written base64 under a "_base64" twin of their name (docs/cli.md).
#ifndef MQLITE_CLI_JSON_H_
#define MQLITE_CLI_JSON_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace mqlite::cli {

bool IsUtf8(std::string_view s);
std::string Base64(std::string_view s);
std::string JsonQuote(std::string_view s);  // "..." with JSON escapes; s must be UTF-8

class JsonObject {
 public:
  // A value that is not UTF-8 is written as `key_base64` instead of `key`
  // (and `key` is null).
  JsonObject& Str(std::string_view key, std::string_view v);
  // Str, or null when absent.
  JsonObject& Bytes(std::string_view key, const std::optional<std::string>& v);
  JsonObject& Int(std::string_view key, int64_t v);
  JsonObject& Bool(std::string_view key, bool v);
  JsonObject& Null(std::string_view key);
  JsonObject& Map(std::string_view key, const std::map<std::string, std::string>& m);
  JsonObject& Raw(std::string_view key, std::string_view json);  // a nested document
  std::string Done() const { return out_.empty() ? "{}" : out_ + "}"; }

 private:
  void Key(std::string_view key);
  std::string out_;
};

}  // namespace mqlite::cli

#endif  // MQLITE_CLI_JSON_H_
