// The LMDB floor: the fewest LMDB operations that implement send_one,
// send_batch, cycle and drain on the LMDB store's layout ideas — one
// environment with the store's flags at the same durability (MDB_NOTLS, plus
// MDB_NOMETASYNC at normal; never MDB_NOSYNC or MDB_WRITEMAP), a fixed map
// big enough that it never grows, and three named databases:
//
//   msgs   seq (big-endian u64, appended with MDB_APPEND) → header + body
//   claim  (queue, seq) → empty     the claimable messages, in seq order
//   lease  (queue, locked_until, seq) → empty     the locked ones, by expiry
//
// A send is two puts (the message and its claim entry), one write transaction
// per send or per batch. A claim is one write transaction: one MDB_SET_RANGE
// on the claim index at the queue's prefix, then per message: delete the
// claim entry under the cursor, copy the message out of the map (as a
// consumer reads the body), rewrite it with the token and lease in its header
// and put its lease entry. A complete reads the header under a cursor (the
// token check), deletes the message and its lease entry. Seqs come from a
// counter in memory (the store keeps its never-reused seq in a meta record:
// one more put per write transaction). No queue records or per-queue
// counters, no groups, no receipts, no dedup, no by-state or age indexes:
// only what any LMDB queue must write. It is the physical limit for the LMDB
// store on this machine; the report shows the store's ratio to it. The
// workloads themselves are floor_workloads.cc, shared with the raw-SQL floor.
//
// lmdb_floor_spec (`spec`) adds, in the same transactions, the writes the
// SPEC obliges an LMDB queue to make, as floor_spec does for SQLite:
//
//   state     (queue, state, seq) → empty   §6 Peek by state (§11: no scan)
//   receipts  seq + token → expires_at      §7.2, one per Complete
//   counters  queue → count per state       O(1) Stats (LMDB has no COUNT)
//
// so send moves three entries more than the floor's two, a claim moves the
// state entry and rewrites the counters, and a complete deletes the state
// entry, rewrites the counters and writes a receipt.
#include <lmdb.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"

namespace mqlite::bench {
namespace {

constexpr size_t kMapBytes = size_t{4} << 30;  // 4 GiB: never full in a run
constexpr int64_t kLockMs = 30'000;

// In front of the body in every msgs value (copied in and out with memcpy:
// values in the map are not aligned).
struct Header {
  int64_t queue = 0;
  int64_t enqueued_at = 0;
  int64_t locked_until = 0;  // 0 while claimable
  uint64_t token[2] = {0, 0};
  int32_t delivery_count = 0;
  int32_t state = 0;  // 0 claimable, 1 locked
};

// A msgs key: the seq, big-endian.
struct SeqKey {
  explicit SeqKey(uint64_t seq) { PutBigEndian(seq, bytes); }
  SeqKey(const SeqKey&) = delete;
  unsigned char bytes[8];
  MDB_val val{sizeof bytes, bytes};
};

class LmdbFloor final : public Floor {
 public:
  LmdbFloor(const std::string& dir, Durability durability, bool spec) : spec_(spec) {
    Ok(mdb_env_create(&env_), "mdb_env_create");
    Ok(mdb_env_set_maxdbs(env_, 6), "mdb_env_set_maxdbs");
    Ok(mdb_env_set_mapsize(env_, kMapBytes), "mdb_env_set_mapsize");
    Ok(mdb_env_open(env_, dir.c_str(), LmdbEnvFlags(durability), 0644), ("open " + dir).c_str());
    MDB_txn* t = BeginTxn();
    Ok(mdb_dbi_open(t, "msgs", MDB_CREATE, &msgs_), "create msgs");
    Ok(mdb_dbi_open(t, "claim", MDB_CREATE, &claim_), "create claim");
    Ok(mdb_dbi_open(t, "lease", MDB_CREATE, &lease_), "create lease");
    if (spec_) {
      Ok(mdb_dbi_open(t, "state", MDB_CREATE, &state_), "create state");
      Ok(mdb_dbi_open(t, "receipts", MDB_CREATE, &receipts_), "create receipts");
      Ok(mdb_dbi_open(t, "counters", MDB_CREATE, &counters_), "create counters");
    }
    Ok(mdb_txn_commit(t), "commit the databases");
  }
  ~LmdbFloor() override {
    if (txn_) mdb_txn_abort(txn_);
    mdb_env_close(env_);
  }

  void Begin() override { txn_ = BeginTxn(); }
  void Commit() override {
    Ok(mdb_txn_commit(txn_), "commit");
    txn_ = nullptr;
  }

  void Insert(int64_t queue, const std::string& body) override {
    Write([&](MDB_txn* t) {
      const uint64_t seq = ++last_seq_;
      SeqKey key(seq);
      MDB_val v{sizeof(Header) + body.size(), nullptr};
      // MDB_RESERVE: the value is written straight into the map.
      Ok(mdb_put(t, msgs_, &key.val, &v, MDB_APPEND | MDB_RESERVE), "append to msgs");
      Header h;
      h.queue = queue;
      h.enqueued_at = NowMs();
      std::memcpy(v.mv_data, &h, sizeof h);
      std::memcpy(static_cast<char*>(v.mv_data) + sizeof h, body.data(), body.size());
      unsigned char ck[16];
      PutBigEndian(static_cast<uint64_t>(queue), ck);
      PutBigEndian(seq, ck + 8);
      MDB_val ckv{sizeof ck, ck}, empty = Empty();
      Ok(mdb_put(t, claim_, &ckv, &empty, 0), "put a claim entry");
      if (spec_) {
        MoveState(t, queue, seq, -1, 0);
        Count(t, queue, -1, 0);
      }
    });
  }

  std::vector<int64_t> Claim(int64_t queue, int max) override {
    MDB_txn* t = BeginTxn();
    const int64_t now = NowMs();
    token_[0] = static_cast<uint64_t>(now);
    token_[1] = ++token_counter_;
    const int64_t locked_until = now + kLockMs;
    MDB_cursor* idx = OpenCursor(t, claim_);
    MDB_cursor* msg = OpenCursor(t, msgs_);
    unsigned char prefix[8];
    PutBigEndian(static_cast<uint64_t>(queue), prefix);
    MDB_val k{sizeof prefix, prefix}, v{};
    std::vector<int64_t> seqs;
    int rc = mdb_cursor_get(idx, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && static_cast<int>(seqs.size()) < max && k.mv_size == 16 &&
           std::memcmp(k.mv_data, prefix, sizeof prefix) == 0) {
      const uint64_t seq = GetBigEndian(static_cast<const char*>(k.mv_data) + 8);
      Ok(mdb_cursor_del(idx, 0), "delete a claim entry");
      SeqKey mk(seq);
      const MDB_val mv = SeekMessage(msg, &mk.val);
      if (seqs.size() == bodies_.size()) bodies_.emplace_back();
      std::string& value = bodies_[seqs.size()];
      value.assign(static_cast<const char*>(mv.mv_data), mv.mv_size);  // out of the map
      Header h;
      std::memcpy(&h, value.data(), sizeof h);
      h.state = 1;
      h.delivery_count += 1;
      h.locked_until = locked_until;
      std::memcpy(h.token, token_, sizeof token_);
      std::memcpy(value.data(), &h, sizeof h);
      MDB_val nv{value.size(), value.data()};
      Ok(mdb_cursor_put(msg, &mk.val, &nv, MDB_CURRENT), "rewrite a claimed message");
      unsigned char lk[24];
      LeaseKey(h, seq, lk);
      MDB_val lkv{sizeof lk, lk}, empty = Empty();
      Ok(mdb_put(t, lease_, &lkv, &empty, 0), "put a lease entry");
      if (spec_) MoveState(t, queue, seq, 0, 1);
      seqs.push_back(static_cast<int64_t>(seq));
      rc = mdb_cursor_get(idx, &k, &v, MDB_NEXT);  // after a delete: the entry behind it
    }
    if (rc != 0 && rc != MDB_NOTFOUND) Ok(rc, "walk the claim index");
    if (spec_ && !seqs.empty()) Count(t, queue, 0, 1, static_cast<int64_t>(seqs.size()));
    mdb_cursor_close(msg);
    mdb_cursor_close(idx);
    Ok(mdb_txn_commit(t), "commit a claim");
    return seqs;
  }

  void Complete(int64_t seq) override {
    Write([&](MDB_txn* t) {
      MDB_cursor* msg = OpenCursor(t, msgs_);
      SeqKey mk(static_cast<uint64_t>(seq));
      const MDB_val mv = SeekMessage(msg, &mk.val);
      Header h;
      std::memcpy(&h, mv.mv_data, sizeof h);
      if (h.state != 1 || std::memcmp(h.token, token_, sizeof token_) != 0) {
        Die("lmdb_floor: complete", Status::Internal("lock lost"));
      }
      Ok(mdb_cursor_del(msg, 0), "delete a message");
      mdb_cursor_close(msg);
      unsigned char lk[24];
      LeaseKey(h, static_cast<uint64_t>(seq), lk);
      MDB_val lkv{sizeof lk, lk};
      Ok(mdb_del(t, lease_, &lkv, nullptr), "delete a lease entry");
      if (spec_) {
        MoveState(t, h.queue, static_cast<uint64_t>(seq), 1, -1);
        Count(t, h.queue, 1, -1);
        unsigned char rk[8 + sizeof token_];
        PutBigEndian(static_cast<uint64_t>(seq), rk);
        std::memcpy(rk + 8, token_, sizeof token_);
        unsigned char exp[8];
        PutBigEndian(static_cast<uint64_t>(NowMs() + 30 * 60 * 1000), exp);
        MDB_val rkv{sizeof rk, rk}, ev{sizeof exp, exp};
        Ok(mdb_put(t, receipts_, &rkv, &ev, 0), "put a receipt");
      }
    });
  }

 private:
  // lmdb_floor_spec: moves seq's (queue, state, seq) entry from state `from`
  // to state `to` (-1: none).
  void MoveState(MDB_txn* t, int64_t queue, uint64_t seq, int from, int to) {
    unsigned char k[17];
    PutBigEndian(static_cast<uint64_t>(queue), k);
    PutBigEndian(seq, k + 9);
    MDB_val kv{sizeof k, k}, empty = Empty();
    if (from >= 0) {
      k[8] = static_cast<unsigned char>(from);
      Ok(mdb_del(t, state_, &kv, nullptr), "delete a state entry");
    }
    if (to >= 0) {
      k[8] = static_cast<unsigned char>(to);
      Ok(mdb_put(t, state_, &kv, &empty, 0), "put a state entry");
    }
  }
  // lmdb_floor_spec: moves `n` messages of `queue` between per-state counts.
  void Count(MDB_txn* t, int64_t queue, int from, int to, int64_t n = 1) {
    unsigned char k[8];
    PutBigEndian(static_cast<uint64_t>(queue), k);
    MDB_val kv{sizeof k, k}, v{};
    int64_t counts[2] = {0, 0};
    const int rc = mdb_get(t, counters_, &kv, &v);
    if (rc == 0 && v.mv_size == sizeof counts) std::memcpy(counts, v.mv_data, sizeof counts);
    if (rc != 0 && rc != MDB_NOTFOUND) Ok(rc, "read the counters");
    if (from >= 0) counts[from] -= n;
    if (to >= 0) counts[to] += n;
    MDB_val nv{sizeof counts, counts};
    Ok(mdb_put(t, counters_, &kv, &nv, 0), "write the counters");
  }
  // (`what` is a C string: no allocation on the success path.)
  static void Ok(int rc, const char* what) {
    if (rc != 0) Die(std::string("lmdb_floor: ") + what, Status::Internal(mdb_strerror(rc)));
  }
  // Positions `msgs` (a cursor on msgs) at the message `key`; its value.
  static MDB_val SeekMessage(MDB_cursor* msgs, MDB_val* key) {
    MDB_val v{};
    Ok(mdb_cursor_get(msgs, key, &v, MDB_SET), "read a message");  // leaves *key as it is
    return v;
  }
  static MDB_val Empty() {
    static char none = 0;
    return MDB_val{0, &none};
  }
  static void LeaseKey(const Header& h, uint64_t seq, unsigned char out[24]) {
    PutBigEndian(static_cast<uint64_t>(h.queue), out);
    PutBigEndian(static_cast<uint64_t>(h.locked_until), out + 8);
    PutBigEndian(seq, out + 16);
  }
  MDB_txn* BeginTxn() {
    MDB_txn* t = nullptr;
    Ok(mdb_txn_begin(env_, nullptr, 0, &t), "begin a write transaction");
    return t;
  }
  static MDB_cursor* OpenCursor(MDB_txn* t, MDB_dbi dbi) {
    MDB_cursor* c = nullptr;
    Ok(mdb_cursor_open(t, dbi, &c), "open a cursor");
    return c;
  }
  // Runs fn in the open transaction (Begin), or in one of its own.
  template <typename Fn>
  void Write(Fn fn) {
    if (txn_) return fn(txn_);
    MDB_txn* t = BeginTxn();
    fn(t);
    Ok(mdb_txn_commit(t), "commit");
  }

  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;  // between Begin and Commit
  MDB_dbi msgs_ = 0, claim_ = 0, lease_ = 0;
  MDB_dbi state_ = 0, receipts_ = 0, counters_ = 0;  // lmdb_floor_spec only
  const bool spec_;
  uint64_t last_seq_ = 0;
  uint64_t token_counter_ = 0;
  uint64_t token_[2] = {0, 0};       // the last Claim's
  std::vector<std::string> bodies_;  // the last Claim's values, as a consumer holds them
};

}  // namespace

std::unique_ptr<Floor> OpenLmdbFloor(const std::string& dir, Durability durability, bool spec) {
  return std::make_unique<LmdbFloor>(dir, durability, spec);
}

void RegisterLmdbFloorWorkloads(Durability durability, bool spec, const Scale& scale) {
  RegisterFloor(std::string(spec ? "lmdb_floor_spec:" : "lmdb_floor:") +
                    std::string(DurabilityName(durability)),
                LmdbLabel(durability, "4 GiB fixed"), scale, [durability, spec](const std::string& dir) {
                  return OpenLmdbFloor(dir, durability, spec);
                });
}

}  // namespace mqlite::bench
