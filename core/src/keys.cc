#include "keys.h"

#include "sha256.h"

namespace mqlite::internal {

std::string DedupKey(const OutgoingMessage& m) {
  if (m.message_id && !m.message_id->empty()) return "i" + *m.message_id;
  return "h" + Sha256::HashBytes(m.body);
}

namespace {
void PutBigEndian(uint64_t v, int bytes, std::string* out) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}
}  // namespace

std::string ReceiptKey(int64_t queue_id, const SettleRequest& r) {
  // The seq, big-endian, leads the key: receipts are written in roughly seq
  // order, so a store's key-ordered index appends to the pages it touched
  // last instead of dirtying a random page per settle (one B-tree page per
  // receipt was most of CompleteBatch's write volume on SQLite).
  std::string key;
  key.reserve(40);
  PutBigEndian(static_cast<uint64_t>(r.seq), 8, &key);
  if (r.op == SettleOp::kAbandon || r.op == SettleOp::kReject) {
    // Arguments that change the effect: a SHA-256 folds them (and the rest)
    // into 32 bytes.
    Sha256 h;
    h.UpdateField("mqlite-receipt-1");
    h.UpdateInt(queue_id);
    h.UpdateInt(r.seq);
    h.Update(std::string_view(reinterpret_cast<const char*>(r.token.bytes.data()), 16));
    h.UpdateInt(static_cast<int>(r.op));
    if (r.op == SettleOp::kAbandon) h.UpdateInt(r.delay_ms);
    if (r.op == SettleOp::kReject) {
      h.UpdateField(r.reason);
      h.UpdateField(r.description);
    }
    auto d = h.Finish();
    key.append(reinterpret_cast<const char*>(d.data()), d.size());
    return key;
  }
  // Complete and Defer have no arguments: the request itself, exactly, in
  // the same 32 bytes — token, queue id, operation, and a tag that a digest
  // of the form above would match by chance once in 2^56 (a SHA-256 costs
  // more than the rest of a Complete's engine work).
  key.append(reinterpret_cast<const char*>(r.token.bytes.data()), 16);
  PutBigEndian(static_cast<uint64_t>(queue_id), 8, &key);
  key.push_back(static_cast<char>(r.op));
  key.append("mqrcpt2", 7);
  return key;
}

}  // namespace mqlite::internal
