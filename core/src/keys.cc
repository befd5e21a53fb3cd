#include "keys.h"

#include "sha256.h"

namespace mqlite::internal {

std::string DedupKey(const OutgoingMessage& m) {
  if (m.message_id && !m.message_id->empty()) return "i" + *m.message_id;
  return "h" + Sha256::HashBytes(m.body);
}

std::string ReceiptKey(int64_t queue_id, const SettleRequest& r) {
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
  // The seq, big-endian, leads the key: receipts are written in roughly seq
  // order, so a store's key-ordered index appends to the pages it touched
  // last instead of dirtying a random page per settle (one B-tree page per
  // receipt was most of CompleteBatch's write volume on SQLite).
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i) {
    key[i] = static_cast<char>(static_cast<uint64_t>(r.seq) >> (56 - 8 * i));
  }
  key.append(reinterpret_cast<const char*>(d.data()), d.size());
  return key;
}

}  // namespace mqlite::internal
