#include "layout.h"

#include <cstring>
#include <utility>

namespace mqlite::lmdb_internal {
namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr char kRowVersion = 2;
constexpr char kQueueVersion = 1;

// Values: fixed-width integers in the key encoding, strings as a u32 length
// and the bytes, optional strings behind a presence byte. Appends to a
// string of the caller's (a scratch buffer reused across rows), or to its own.
class Out {
 public:
  Out() : s_(&own_) {}
  explicit Out(std::string* out) : s_(out) {}
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  Out& I64(int64_t v) {
    AppendI64(s_, v);
    return *this;
  }
  Out& Byte(uint8_t b) {
    s_->push_back(static_cast<char>(b));
    return *this;
  }
  Out& Str(std::string_view v) {
    const uint32_t n = static_cast<uint32_t>(v.size());
    const char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                         static_cast<char>(n >> 8), static_cast<char>(n)};
    s_->append(len, 4);
    s_->append(v);
    return *this;
  }
  Out& Opt(const std::optional<std::string>& v) {
    Byte(v ? 1 : 0);
    if (v) Str(*v);
    return *this;
  }
  Out& Raw(std::string_view v) {
    s_->append(v);
    return *this;
  }
  std::string Take() { return std::move(*s_); }

 private:
  std::string own_;
  std::string* s_;
};

// Reads what Out wrote; any short read makes ok() false for good.
class In {
 public:
  explicit In(std::string_view d) : d_(d) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == d_.size(); }
  int64_t I64() {
    if (!Need(8)) return 0;
    const int64_t v = ReadI64(d_.data() + pos_);
    pos_ += 8;
    return v;
  }
  uint8_t Byte() {
    if (!Need(1)) return 0;
    return static_cast<uint8_t>(d_[pos_++]);
  }
  std::string Str() {
    if (!Need(4)) return {};
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<uint8_t>(d_[pos_ + i]);
    pos_ += 4;
    if (!Need(n)) return {};
    std::string v(d_.substr(pos_, n));
    pos_ += n;
    return v;
  }
  std::optional<std::string> Opt() {
    if (Byte() == 0) return std::nullopt;
    return Str();
  }
  std::string_view Raw(size_t n) {
    if (!Need(n)) return {};
    std::string_view v = d_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::string_view Rest() {
    std::string_view v = d_.substr(pos_);
    pos_ = d_.size();
    return v;
  }

 private:
  bool Need(size_t n) {
    if (ok_ && d_.size() - pos_ >= n) return true;
    ok_ = false;
    return false;
  }
  std::string_view d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

Status Malformed(const char* what) {
  return Status::Corruption(std::string("LMDB store: a malformed ") + what +
                            " value (the environment was changed by something other than this "
                            "build of mqlite)");
}

}  // namespace

const char* DbName(Db db) {
  static const char* const kNames[kDbCount] = {
      "mqlite/meta",
      "mqlite/queue_names",
      "mqlite/messages",
      "mqlite/dedup",
      "mqlite/attempts",
      "mqlite/index",
      "mqlite/index (queue records)",
      "mqlite/messages (receipts)",
      "mqlite/index (claim)",
      "mqlite/index (redriven)",
      "mqlite/index (group)",
      "mqlite/index (due)",
      "mqlite/index (lease)",
      "mqlite/index (ttl)",
      "mqlite/index (dlq)",
      "mqlite/index (by_state)",
      "mqlite/index (dedup expiry)",
      "mqlite/index (receipt expiry)",
      "mqlite/index (attempt expiry)",
  };
  return kNames[db];
}

char IndexTag(Db db) {
  switch (db) {
    case kClaim: return 'c';
    case kRedriven: return 'r';
    case kGroup: return 'g';
    case kDue: return 'd';
    case kLease: return 'l';
    case kTtl: return 't';
    case kDlq: return 'x';
    case kByState: return 's';
    case kDedupExp: return 'D';
    case kReceiptExp: return 'R';
    case kAttemptExp: return 'A';
    default: return '\0';
  }
}

int64_t ReadI64(const char* p) {
  uint64_t u = 0;
  std::memcpy(&u, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  u = __builtin_bswap64(u);
#endif
  return static_cast<int64_t>(u ^ kSignBit);
}

Key& Key::I64(int64_t v) {
  if (kCapacity - n_ < 8) std::abort();
  uint64_t u = static_cast<uint64_t>(v) ^ kSignBit;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  u = __builtin_bswap64(u);
#endif
  std::memcpy(buf_.data() + n_, &u, 8);
  n_ += 8;
  return *this;
}

Key& Key::U32(uint32_t v) {
  for (int i = 3; i >= 0; --i) Byte(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}

Key SeqKey(int64_t seq) { return Key().I64(seq); }

Key QueueKey(int64_t queue_id) { return Key().Byte(kQueueKeyTag).I64(queue_id); }

Result<Key> ReceiptKey(std::string_view engine_key) {
  if (engine_key.size() < 9 || engine_key.size() > 160) {
    return Status::InvalidArgument("LMDB store: a receipt key of " +
                                   std::to_string(engine_key.size()) +
                                   " bytes (receipt keys begin with the 8-byte seq, are longer, "
                                   "and at most 160 bytes)");
  }
  Key out;
  out.Byte(static_cast<char>(static_cast<uint8_t>(engine_key[0]) ^ 0x80))
      .Append(engine_key.substr(1));
  return out;
}

Key IndexKey(Db db, int64_t queue_id, int64_t b, int64_t seq) {
  return Key().Byte(IndexTag(db)).I64(queue_id).I64(b).I64(seq);
}

Key IndexPrefix(Db db, int64_t queue_id) { return Key().Byte(IndexTag(db)).I64(queue_id); }

Key IndexPrefix(Db db, int64_t queue_id, int64_t b) {
  return Key().Byte(IndexTag(db)).I64(queue_id).I64(b);
}

Key GroupPrefix(int64_t queue_id, std::string_view group_key) {
  return IndexPrefix(kGroup, queue_id)
      .U32(static_cast<uint32_t>(group_key.size()))
      .Append(group_key);
}

Key GroupKey(int64_t queue_id, std::string_view group_key, int64_t seq) {
  return GroupPrefix(queue_id, group_key).I64(seq);
}

Key ExpiryKey(Db db, int64_t expires_at, std::string_view key) {
  return Key().Byte(IndexTag(db)).I64(expires_at).Append(key);
}

// A row's value: the header (version, then the RowState fields, redriven and
// the body size), then the payload. The header's fixed part comes first, so
// a decode reads it with fixed offsets before the three optional strings.
void EncodeRow(const Row& r, std::string_view payload, std::string* out) {
  auto opt_size = [](const std::optional<std::string>& v) { return v ? 5 + v->size() : 1; };
  out->clear();
  out->reserve(4 + 9 * 8 + 16 + opt_size(r.group_key) + opt_size(r.dead_letter_reason) +
               opt_size(r.dead_letter_description) + payload.size());
  Out(out)
      .Byte(kRowVersion)
      .I64(r.queue_id)
      .Byte(static_cast<uint8_t>(r.state))
      .Byte(r.is_head ? 1 : 0)
      .Byte(r.redriven ? 1 : 0)
      .I64(r.priority)
      .I64(r.delivery_count)
      .I64(r.enqueued_at)
      .I64(r.visible_at)
      .I64(r.expires_at)
      .I64(r.locked_until)
      .I64(r.dead_lettered_at)
      .I64(r.body_size)
      .Raw(std::string_view(reinterpret_cast<const char*>(r.token.bytes.data()),
                            r.token.bytes.size()))
      .Opt(r.group_key)
      .Opt(r.dead_letter_reason)
      .Opt(r.dead_letter_description)
      .Raw(payload);
}

Result<Row> DecodeRow(std::string_view data, std::string_view* payload) {
  In in(data);
  Row r;
  if (in.Byte() != kRowVersion) return Malformed("message");
  r.queue_id = in.I64();
  const uint8_t state = in.Byte();
  if (state >= kStates) return Malformed("message");
  r.state = static_cast<MessageState>(state);
  r.is_head = in.Byte() != 0;
  r.redriven = in.Byte() != 0;
  r.priority = static_cast<int32_t>(in.I64());
  r.delivery_count = static_cast<int32_t>(in.I64());
  r.enqueued_at = in.I64();
  r.visible_at = in.I64();
  r.expires_at = in.I64();
  r.locked_until = in.I64();
  r.dead_lettered_at = in.I64();
  r.body_size = in.I64();
  std::string_view token = in.Raw(r.token.bytes.size());
  if (in.ok()) std::memcpy(r.token.bytes.data(), token.data(), token.size());
  r.group_key = in.Opt();
  r.dead_letter_reason = in.Opt();
  r.dead_letter_description = in.Opt();
  if (!in.ok() || r.body_size < 0) return Malformed("message");
  const std::string_view rest = in.Rest();
  if (static_cast<uint64_t>(r.body_size) > rest.size()) return Malformed("message");
  if (payload) *payload = rest;
  return r;
}

void EncodePayload(const OutgoingMessage& m, std::string* out) {
  Out(out)
      .Opt(m.message_id)
      .Opt(m.group_id)
      .Opt(m.subject)
      .Opt(m.correlation_id)
      .Opt(m.content_type)
      .I64(static_cast<int64_t>(m.properties.size()));
  for (const auto& [k, v] : m.properties) Out(out).Str(k).Str(v);
  out->append(m.body);  // last, unprefixed: the rest of the value
}

Result<RowPayload> DecodePayload(std::string_view data) {
  In in(data);
  RowPayload p;
  p.message_id = in.Opt();
  p.group_id = in.Opt();
  p.subject = in.Opt();
  p.correlation_id = in.Opt();
  p.content_type = in.Opt();
  const int64_t props = in.I64();
  if (!in.ok() || props < 0 || static_cast<uint64_t>(props) > data.size()) {
    return Malformed("message");
  }
  for (int64_t i = 0; i < props && in.ok(); ++i) {
    std::string k = in.Str();
    std::string v = in.Str();
    p.properties.emplace(std::move(k), std::move(v));
  }
  if (!in.ok()) return Malformed("message");
  p.body = std::string(in.Rest());
  return p;
}

std::string EncodeQueue(const QueueData& q) {
  const QueueConfig& c = q.config;
  Out o;
  o.Byte(kQueueVersion)
      .Str(c.name)
      .I64(c.lock_duration_ms)
      .I64(c.max_delivery_count)
      .I64(c.default_ttl_ms)
      .Byte(c.dead_letter_on_expire ? 1 : 0)
      .I64(c.dedup_window_ms)
      .Byte(static_cast<uint8_t>(c.ordering))
      .I64(c.dlq_max_age_ms)
      .I64(c.dlq_max_count)
      .I64(c.dlq_max_bytes)
      .I64(c.max_message_bytes)
      .I64(q.created_at)
      .I64(q.last_seq);
  for (int s = 0; s < kStates; ++s) o.I64(q.count[s]).I64(q.bytes[s]);
  return o.Take();
}

Result<QueueData> DecodeQueue(std::string_view data) {
  In in(data);
  QueueData q;
  QueueConfig& c = q.config;
  if (in.Byte() != kQueueVersion) return Malformed("queue");
  c.name = in.Str();
  c.lock_duration_ms = in.I64();
  c.max_delivery_count = static_cast<int32_t>(in.I64());
  c.default_ttl_ms = in.I64();
  c.dead_letter_on_expire = in.Byte() != 0;
  c.dedup_window_ms = in.I64();
  const uint8_t ordering = in.Byte();
  if (ordering > static_cast<uint8_t>(Ordering::kStrictFifo)) return Malformed("queue");
  c.ordering = static_cast<Ordering>(ordering);
  c.dlq_max_age_ms = in.I64();
  c.dlq_max_count = in.I64();
  c.dlq_max_bytes = in.I64();
  c.max_message_bytes = in.I64();
  q.created_at = in.I64();
  q.last_seq = in.I64();
  for (int s = 0; s < kStates; ++s) {
    q.count[s] = in.I64();
    q.bytes[s] = in.I64();
  }
  if (!in.ok() || !in.at_end()) return Malformed("queue");
  return q;
}

std::string EncodeDedup(const DedupRecord& r) {
  return Out().I64(r.seq).I64(r.expires_at).Raw(r.body_hash).Take();
}

Result<DedupRecord> DecodeDedup(std::string_view data) {
  In in(data);
  DedupRecord r;
  r.seq = in.I64();
  r.expires_at = in.I64();
  r.body_hash = std::string(in.Rest());
  if (!in.ok()) return Malformed("dedup");
  return r;
}

std::string EncodeAttempt(const AttemptRecord& r) {
  return Out()
      .I64(r.queue_id)
      .Byte(static_cast<uint8_t>(r.mode))
      .I64(r.expires_at)
      .Raw(r.payload)
      .Take();
}

Result<AttemptRecord> DecodeAttempt(std::string_view data) {
  In in(data);
  AttemptRecord r;
  r.queue_id = in.I64();
  r.mode = static_cast<ReceiveMode>(in.Byte());
  r.expires_at = in.I64();
  r.payload = std::string(in.Rest());
  if (!in.ok()) return Malformed("attempt");
  return r;
}

}  // namespace mqlite::lmdb_internal
