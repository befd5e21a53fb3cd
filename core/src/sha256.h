// SHA-256 (FIPS 180-4), for dedup content keys (SPEC §4) and receipt keys
// (SPEC §7.2). Small and dependency-free; checked against the NIST vectors.
#ifndef MQLITE_CORE_SRC_SHA256_H_
#define MQLITE_CORE_SRC_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace mqlite::internal {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Appends a length-prefixed field, so concatenations cannot collide
  // ("ab","c" vs "a","bc").
  void UpdateField(std::string_view data);
  void UpdateInt(int64_t v);
  std::array<uint8_t, 32> Finish();  // the object is spent afterwards

  static std::array<uint8_t, 32> Hash(std::string_view data);
  static std::string HashBytes(std::string_view data);  // 32 raw bytes
  static std::string Hex(const std::array<uint8_t, 32>& digest);

 private:
  void Block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

}  // namespace mqlite::internal

#endif  // MQLITE_CORE_SRC_SHA256_H_
