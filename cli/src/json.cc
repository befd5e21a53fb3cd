#include "json.h"

#include <fmt/format.h>

namespace mqlite::cli {

bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

std::string Base64(std::string_view s) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((s.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(s[i])) << 16) | (uint32_t(uint8_t(s[i + 1])) << 8) |
                       uint8_t(s[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < s.size()) {
    uint32_t v = uint32_t(uint8_t(s[i])) << 16;
    if (i + 1 < s.size()) v |= uint32_t(uint8_t(s[i + 1])) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < s.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

void JsonObject::Key(std::string_view key) {
  out_ += out_.empty() ? "{" : ",";
  out_ += JsonQuote(key);
  out_ += ':';
}

JsonObject& JsonObject::Str(std::string_view key, std::string_view v) {
  if (IsUtf8(v)) {
    Key(key);
    out_ += JsonQuote(v);
    return *this;
  }
  Null(key);
  Key(std::string(key) + "_base64");
  out_ += JsonQuote(Base64(v));
  return *this;
}

JsonObject& JsonObject::Bytes(std::string_view key, const std::optional<std::string>& v) {
  return v ? Str(key, *v) : Null(key);
}

JsonObject& JsonObject::Int(std::string_view key, int64_t v) {
  Key(key);
  out_ += std::to_string(v);
  return *this;
}

JsonObject& JsonObject::Bool(std::string_view key, bool v) {
  Key(key);
  out_ += v ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::Null(std::string_view key) {
  Key(key);
  out_ += "null";
  return *this;
}

JsonObject& JsonObject::Map(std::string_view key, const std::map<std::string, std::string>& m) {
  JsonObject inner;
  for (const auto& [k, v] : m) inner.Bytes(k, v);
  return Raw(key, inner.Done());
}

JsonObject& JsonObject::Raw(std::string_view key, std::string_view json) {
  Key(key);
  out_ += json;
  return *this;
}

}  // namespace mqlite::cli
