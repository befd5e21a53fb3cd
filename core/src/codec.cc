#include "codec.h"

#include <cstring>

namespace mqlite::internal {
namespace {

constexpr char kVersion = 1;

class Writer {
 public:
  void Int(int64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  }
  void Bytes(std::string_view s) {
    Int(static_cast<int64_t>(s.size()));
    out_.append(s);
  }
  void Opt(const std::optional<std::string>& s) {
    out_.push_back(s ? 1 : 0);
    if (s) Bytes(*s);
  }
  void Raw(char c) { out_.push_back(c); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool Int(int64_t* v) {
    if (in_.size() - pos_ < 8) return false;
    uint64_t x = 0;
    for (int i = 0; i < 8; ++i) x |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += 8;
    *v = static_cast<int64_t>(x);
    return true;
  }
  bool Bytes(std::string* s) {
    int64_t n = 0;
    if (!Int(&n) || n < 0 || static_cast<uint64_t>(n) > in_.size() - pos_) return false;
    s->assign(in_.substr(pos_, static_cast<size_t>(n)));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool Opt(std::optional<std::string>* s) {
    char flag = 0;
    if (!Raw(&flag)) return false;
    if (flag == 0) {
      s->reset();
      return true;
    }
    std::string v;
    if (!Bytes(&v)) return false;
    *s = std::move(v);
    return true;
  }
  bool Raw(char* c) {
    if (pos_ >= in_.size()) return false;
    *c = in_[pos_++];
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

std::string EncodeMessages(const std::vector<Message>& messages) {
  Writer w;
  w.Raw(kVersion);
  w.Int(static_cast<int64_t>(messages.size()));
  for (const Message& m : messages) {
    w.Int(m.seq);
    w.Bytes(m.queue);
    w.Bytes(m.body);
    w.Opt(m.message_id);
    w.Opt(m.group_id);
    w.Opt(m.subject);
    w.Opt(m.correlation_id);
    w.Opt(m.content_type);
    w.Int(static_cast<int64_t>(m.properties.size()));
    for (const auto& [k, v] : m.properties) {
      w.Bytes(k);
      w.Bytes(v);
    }
    w.Int(m.priority);
    w.Int(m.enqueued_at);
    w.Int(m.visible_at);
    w.Int(m.expires_at);
    w.Int(m.delivery_count);
    w.Int(static_cast<int>(m.state));
    w.Int(m.locked_until);
    w.Bytes(std::string_view(reinterpret_cast<const char*>(m.lock_token.bytes.data()), 16));
    w.Opt(m.dead_letter_reason);
    w.Opt(m.dead_letter_description);
    w.Int(m.dead_lettered_at);
  }
  return w.Take();
}

Result<std::vector<Message>> DecodeMessages(std::string_view data) {
  Reader r(data);
  const Status bad = Status::Corruption("malformed receive-attempt record");
  char version = 0;
  if (!r.Raw(&version) || version != kVersion) return bad;
  int64_t n = 0;
  if (!r.Int(&n) || n < 0 || n > 1'000'000) return bad;
  std::vector<Message> out(static_cast<size_t>(n));
  for (Message& m : out) {
    int64_t props = 0, v = 0;
    std::string token;
    if (!r.Int(&m.seq) || !r.Bytes(&m.queue) || !r.Bytes(&m.body) || !r.Opt(&m.message_id) ||
        !r.Opt(&m.group_id) || !r.Opt(&m.subject) || !r.Opt(&m.correlation_id) ||
        !r.Opt(&m.content_type) || !r.Int(&props) || props < 0) {
      return bad;
    }
    for (int64_t i = 0; i < props; ++i) {
      std::string k, val;
      if (!r.Bytes(&k) || !r.Bytes(&val)) return bad;
      m.properties[std::move(k)] = std::move(val);
    }
    if (!r.Int(&v)) return bad;
    m.priority = static_cast<int>(v);
    if (!r.Int(&m.enqueued_at) || !r.Int(&m.visible_at) || !r.Int(&m.expires_at)) return bad;
    if (!r.Int(&v)) return bad;
    m.delivery_count = static_cast<int32_t>(v);
    if (!r.Int(&v) || v < 0 || v > 4) return bad;
    m.state = static_cast<MessageState>(v);
    if (!r.Int(&m.locked_until) || !r.Bytes(&token) || token.size() != 16) return bad;
    std::memcpy(m.lock_token.bytes.data(), token.data(), 16);
    if (!r.Opt(&m.dead_letter_reason) || !r.Opt(&m.dead_letter_description) ||
        !r.Int(&m.dead_lettered_at)) {
      return bad;
    }
  }
  if (!r.done()) return bad;
  return out;
}

}  // namespace mqlite::internal
