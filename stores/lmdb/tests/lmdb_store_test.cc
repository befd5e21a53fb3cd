// What only the LMDB store has (docs/lmdb-store.md); its queue behaviour is
// graded by the kit (tck_lmdb_test.cc).
#include <gtest/gtest.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>
#include <vector>

#include "layout.h"
#include "lmdb_pins.h"
#include "lmdb_profile.h"
#include "mqlite/engine.h"
#include "mqlite/lmdb.h"
#include "probe.h"
#include "suite_util.h"  // tck/src: the kit's assertion helpers

namespace mqlite {
namespace {

using tck::suite::kT0;

// A temp directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mqlite-lmdb-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    EXPECT_NE(::mkdtemp(buf.data()), nullptr);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string env() const { return path_ + "/env"; }

 private:
  std::string path_;
};

std::unique_ptr<Engine> OpenEngine(const LmdbOptions& o, ManualClock* clock) {
  auto store = OpenLmdbStore(o);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return nullptr;
  EngineOptions eo;
  eo.clock = clock;
  eo.background_maintenance = false;
  auto e = Engine::Open(std::move(*store), eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

TEST(LmdbStore, CapabilitiesDescribeAnExclusiveCrashSafeStore) {
  TempDir d;
  auto store = OpenLmdbStore({.dir = d.env()});
  MQ_ASSERT_OK(store);
  const StoreCapabilities c = (*store)->Capabilities();
  EXPECT_TRUE(c.exclusive);
  EXPECT_EQ(c.name, "lmdb");
  EXPECT_EQ(c.native_handle_type, "MDB_txn");
  EXPECT_EQ(c.crash_model, "process");
  EXPECT_EQ(c.write_concurrency, 1);
  EXPECT_FALSE(c.commits_with_final_call) << "an embedded store ignores FinalCallFollows";
  EXPECT_FALSE(c.change_feed);
}


// ---- Opening (SPEC §9, §10) ---------------------------------------------------

TEST(LmdbStore, BadOptionsAndPathsAreRefusedNamingTheProblem) {
  TempDir d;
  auto empty = OpenLmdbStore({});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  auto small = OpenLmdbStore({.dir = d.env(), .initial_map_bytes = 4096});
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  auto inverted = OpenLmdbStore(
      {.dir = d.env(), .initial_map_bytes = int64_t{1} << 20, .max_map_bytes = int64_t{1} << 19});
  EXPECT_EQ(inverted.status().code(), StatusCode::kInvalidArgument);
  MQ_EXPECT_CODE(OpenLmdbStore({.dir = d.env(), .durability = static_cast<Durability>(9)}),
                 kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(d.env())) << "a refused open created the directory";
  // A regular file where the directory should be.
  { std::ofstream(d.path() + "/file") << "x"; }
  auto file = OpenLmdbStore({.dir = d.path() + "/file"});
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(file.status().message().find("not a directory"), std::string_view::npos);
  // A missing parent.
  auto orphan = OpenLmdbStore({.dir = d.path() + "/no/such/dir"});
  EXPECT_EQ(orphan.status().code(), StatusCode::kInvalidArgument) << orphan.status().ToString();
}

TEST(LmdbStore, SecondOpenIsDbLockedUnderAnySpellingUntilTheFirstCloses) {
  TempDir d;
  auto first = OpenLmdbStore({.dir = d.env()});
  MQ_ASSERT_OK(first);
  std::filesystem::create_directory_symlink(d.env(), d.path() + "/alias");
  for (const std::string& spelling : {d.env(), d.path() + "/alias", d.path() + "/./env/"}) {
    auto second = OpenLmdbStore({.dir = spelling});
    EXPECT_EQ(second.status().code(), StatusCode::kDbLocked) << spelling;
  }
  first->reset();
  MQ_ASSERT_OK(OpenLmdbStore({.dir = d.path() + "/alias"}));
}

// The bytes of every file in `dir`.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() == "lock.mdb" || e.path().filename() == "data.mdb.lock") continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[e.path().filename().string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

// Writes `value` at `key` of named database `db` with LMDB directly (no store open).
void RawPut(const std::string& dir, const char* db, std::string_view key, std::string_view value) {
  MDB_env* env = nullptr;
  ASSERT_EQ(mdb_env_create(&env), 0);
  mdb_env_set_maxdbs(env, 64);
  ASSERT_EQ(mdb_env_open(env, dir.c_str(), 0, 0644), 0);
  MDB_txn* txn = nullptr;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi dbi = 0;
  ASSERT_EQ(mdb_dbi_open(txn, db, MDB_CREATE, &dbi), 0);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

TEST(LmdbStore, AnotherSchemaTokenIsSchemaVersionMismatchWithNothingChanged) {
  TempDir d;
  {
    ManualClock clock(kT0);
    auto e = OpenEngine({.dir = d.env()}, &clock);
    ASSERT_TRUE(e);
    MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
    MQ_ASSERT_OK(e->Send("q", {.body = "kept"}));
  }
  RawPut(d.env(), "mqlite/meta", "schema", "mqlite-lmdb-0");
  const auto before = Snapshot(d.env());
  auto s = OpenLmdbStore({.dir = d.env()});
  EXPECT_EQ(s.status().code(), StatusCode::kSchemaVersionMismatch) << s.status().ToString();
  EXPECT_NE(s.status().message().find("mqlite-lmdb-0"), std::string_view::npos);
  EXPECT_NE(s.status().message().find(kLmdbSchemaToken), std::string_view::npos);
  EXPECT_EQ(Snapshot(d.env()), before) << "a refused open changed the environment";
}

TEST(LmdbStore, AForeignEnvironmentIsRefusedWithNothingChanged) {
  TempDir d;
  std::filesystem::create_directory(d.env());
  RawPut(d.env(), "orders", "k", "v");
  const auto before = Snapshot(d.env());
  auto s = OpenLmdbStore({.dir = d.env()});
  EXPECT_EQ(s.status().code(), StatusCode::kSchemaVersionMismatch) << s.status().ToString();
  EXPECT_EQ(Snapshot(d.env()), before);
  // And a data.mdb that is not LMDB at all.
  TempDir g;
  std::filesystem::create_directory(g.env());
  { std::ofstream(g.env() + "/data.mdb") << std::string(8192, 'x'); }
  auto garbage = OpenLmdbStore({.dir = g.env()});
  EXPECT_EQ(garbage.status().code(), StatusCode::kCorruption) << garbage.status().ToString();
}

// SPEC §3: the seq counter lives in memory and in each queue's record (no
// meta write per send); a reopen must still never hand out a seq again —
// after the newest message is deleted, and after the queue that held the
// highest seq is deleted.
TEST(LmdbStore, SeqsAreNeverReusedAfterDeletesAndQueueDeletesAcrossReopens) {
  TempDir d;
  ManualClock clock(kT0);
  int64_t highest = 0;
  {
    auto e = OpenEngine({.dir = d.env()}, &clock);
    ASSERT_TRUE(e);
    MQ_ASSERT_OK(e->CreateQueue({.name = "keep"}));
    MQ_ASSERT_OK(e->CreateQueue({.name = "gone"}));
    MQ_ASSERT_OK(e->Send("keep", {.body = "a"}));
    for (int i = 0; i < 3; ++i) {
      auto seq = e->Send("gone", {.body = "b"});
      MQ_ASSERT_OK(seq);
      highest = *seq;
    }
    MQ_ASSERT_OK(e->DeleteQueue("gone"));
  }
  {
    auto e = OpenEngine({.dir = d.env()}, &clock);
    ASSERT_TRUE(e);
    auto seq = e->Send("keep", {.body = "c"});
    MQ_ASSERT_OK(seq);
    EXPECT_GT(*seq, highest) << "a deleted queue's seqs were handed out again";
    highest = *seq;
    auto got = e->Receive("keep", {.max_messages = 10, .mode = ReceiveMode::kReceiveAndDelete});
    MQ_ASSERT_OK(got);
    EXPECT_EQ(got->size(), 2u);
  }
  auto e = OpenEngine({.dir = d.env()}, &clock);
  ASSERT_TRUE(e);
  auto seq = e->Send("keep", {.body = "d"});
  MQ_ASSERT_OK(seq);
  EXPECT_GT(*seq, highest) << "the seq of a deleted newest message was handed out again";
}

// ---- Layout and environment goldens (SPEC §10) --------------------------------

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

// Every (database, key, value) of the environment, hex, with LMDB directly.
std::vector<std::string> Dump(const std::string& dir) {
  std::vector<std::string> out;
  MDB_env* env = nullptr;
  EXPECT_EQ(mdb_env_create(&env), 0);
  mdb_env_set_maxdbs(env, 64);
  EXPECT_EQ(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0644), 0);
  MDB_txn* txn = nullptr;
  EXPECT_EQ(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), 0);
  MDB_dbi main = 0;
  EXPECT_EQ(mdb_dbi_open(txn, nullptr, 0, &main), 0);
  std::vector<std::string> names;
  MDB_cursor* c = nullptr;
  MDB_val k{}, v{};
  EXPECT_EQ(mdb_cursor_open(txn, main, &c), 0);
  while (mdb_cursor_get(c, &k, &v, names.empty() ? MDB_FIRST : MDB_NEXT) == 0) {
    names.emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
  }
  mdb_cursor_close(c);
  for (const std::string& name : names) {
    MDB_dbi dbi = 0;
    EXPECT_EQ(mdb_dbi_open(txn, name.c_str(), 0, &dbi), 0) << name;
    EXPECT_EQ(mdb_cursor_open(txn, dbi, &c), 0);
    int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    if (rc != 0) out.push_back(name);
    for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
      out.push_back(name + " " + Hex(std::string_view(static_cast<const char*>(k.mv_data), k.mv_size)) +
                    " = " + Hex(std::string_view(static_cast<const char*>(v.mv_data), v.mv_size)));
    }
    mdb_cursor_close(c);
  }
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return out;
}

// The key layout, byte for byte (layout.h). A change here is a new schema
// token (kLmdbSchemaToken) and a CHANGELOG entry, never a silent edit.
TEST(LmdbStore, KeyLayoutGolden) {
  TempDir d;
  {
    ManualClock clock(kT0);
    auto e = OpenEngine({.dir = d.env()}, &clock);
    ASSERT_TRUE(e);
    MQ_ASSERT_OK(e->CreateQueue({.name = "q", .dedup_window_ms = 60'000, .ordering = Ordering::kGroupFifo}));
    MQ_ASSERT_OK(e->Send("q", {.body = "b1", .message_id = std::string("m1"),
                               .group_id = std::string("g"), .properties = {{"k", "v"}},
                               .priority = 3}));
    MQ_ASSERT_OK(e->Send("q", {.body = "b2", .group_id = std::string("g"), .delay_ms = 5'000,
                               .ttl_ms = 60'000}));
  }
  const std::vector<std::string> dump = Dump(d.env());
  std::string joined;
  for (const std::string& line : dump) joined += line + "\n";
  EXPECT_EQ(kLmdbSchemaToken, std::string("mqlite-lmdb-2"));
  // Read as: sub-database, key hex = value hex. i64s are big-endian with the
  // sign bit flipped (1 → 8000000000000001); kT0 = 8000018bcfe56800. In
  // mqlite/index the first byte is the index's tag: 44 'D' dedup expiry,
  // 63 'c' claim, 64 'd' due, 67 'g' group, 73 's' by_state (class 0 for
  // active and locked), 74 't' ttl. Seq 1 is an active group head (claim key
  // priority -3 → 7ff...fd), seq 2 a scheduled member behind it (due at
  // kT0 + 5 s, ttl at due + 60 s). The queue record (in mqlite/index, key
  // ff + id, after every index) ends with its last_seq (2) and (count, bytes)
  // per state. A row is its header — version 02, queue, state, is_head,
  // redriven, priority, delivery count, enqueued/visible/expires/locked-until/
  // dead-lettered times, body size, token, then group key and dead-letter
  // reason and description behind presence bytes — then its payload: ids,
  // subject, content type, properties, and the body last. No meta
  // "last_seq": it is written only when a queue is deleted.
  const char* const kGolden =
      "mqlite/attempts\n"
      "mqlite/dedup 8000000000000001684814d92093ac8a0f4a2163ab87dee509ba306a58f5888be0edcb2fc"
      "d0712028b = 80000000000000028000018bcfe652604814d92093ac8a0f4a2163ab87dee509ba306a58f588"
      "8be0edcb2fcd0712028b\n"
      "mqlite/dedup 8000000000000001696d31 = 80000000000000018000018bcfe652607dc96f776c8423e5"
      "7a2785489a3f9c43fb6e756876d6ad9a9cac4aa4e72ec193\n"
      "mqlite/index 448000018bcfe652608000000000000001684814d92093ac8a0f4a2163ab87dee509ba306"
      "a58f5888be0edcb2fcd0712028b = \n"
      "mqlite/index 448000018bcfe652608000000000000001696d31 = \n"
      "mqlite/index 6380000000000000017ffffffffffffffd8000000000000001 = \n"
      "mqlite/index 6480000000000000018000018bcfe57b888000000000000002 = \n"
      "mqlite/index 67800000000000000100000001678000000000000001 = \n"
      "mqlite/index 67800000000000000100000001678000000000000002 = \n"
      "mqlite/index 73800000000000000180000000000000008000000000000001 = \n"
      "mqlite/index 73800000000000000180000000000000038000000000000002 = \n"
      "mqlite/index 7480000000000000018000018bcfe665e88000000000000002 = \n"
      "mqlite/index ff8000000000000001 = 0100000001718000000000007530800000000000000a80000000"
      "0000000001800000000000ea6001800000000000000080000000000000008000000000000000800000000000"
      "00008000018bcfe5680080000000000000028000000000000001800000000000000280000000000000008000"
      "0000000000008000000000000000800000000000000080000000000000018000000000000002800000000000"
      "00008000000000000000\n"
      "mqlite/messages 8000000000000001 = 028000000000000001000100800000000000000380000000000"
      "000008000018bcfe568008000018bcfe56800800000000000000080000000000000008000000000000000800"
      "000000000000200000000000000000000000000000000010000000167000001000000026d310100000001670"
      "000008000000000000001000000016b00000001766231\n"
      "mqlite/messages 8000000000000002 = 028000000000000001030000800000000000000080000000000"
      "000008000018bcfe568008000018bcfe57b888000018bcfe665e880000000000000008000000000000000800"
      "0000000000002000000000000000000000000000000000100000001670000000100000001670000008000000"
      "0000000006232\n"
      "mqlite/meta 6c6173745f71756575655f6964 = 8000000000000001\n"
      "mqlite/meta 736368656d61 = 6d716c6974652d6c6d64622d32\n"
      "mqlite/queue_names 71 = 8000000000000001\n";
  EXPECT_EQ(joined, kGolden);
}

// A settlement receipt (§7.2) is stored in mqlite/messages right after its
// message's row (key = the engine's key, first bit flipped, so it starts with
// the row's key): the Complete that deletes the row writes the same leaf.
TEST(LmdbStore, AReceiptIsStoredBesideItsMessage) {
  TempDir d;
  int64_t seq = 0;
  {
    ManualClock clock(kT0);
    auto e = OpenEngine({.dir = d.env()}, &clock);
    ASSERT_TRUE(e);
    MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
    auto sent = e->Send("q", {.body = "b"});
    MQ_ASSERT_OK(sent);
    seq = *sent;
    auto got = e->Receive("q");
    MQ_ASSERT_OK(got);
    ASSERT_EQ(got->size(), 1u);
    MQ_ASSERT_OK(e->Complete("q", seq, got->front().lock_token));
    // The receipt answers a replay (§7.2).
    MQ_ASSERT_OK(e->Complete("q", seq, got->front().lock_token));
  }
  const std::string row = "mqlite/messages " + Hex(lmdb_internal::SeqKey(seq).view());
  int receipts = 0;
  for (const std::string& line : Dump(d.env())) {
    if (line.rfind(row, 0) != 0) continue;
    EXPECT_NE(line.substr(row.size(), 1), " ") << "the row itself should be gone: " << line;
    EXPECT_EQ(line.find(" = "), row.size() + 2 * 32) << "a 40-byte key: " << line;
    ++receipts;
  }
  EXPECT_EQ(receipts, 1);
}

TEST(LmdbStore, EnvironmentFlagsGolden) {
  using lmdb_internal::EnvFlagsFor;
  EXPECT_EQ(EnvFlagsFor(Durability::kNormal), unsigned{MDB_NOTLS | MDB_NOMETASYNC});
  EXPECT_EQ(EnvFlagsFor(Durability::kFull), unsigned{MDB_NOTLS});
  EXPECT_EQ(EnvFlagsFor(Durability::kProcessOnly), unsigned{MDB_NOTLS | MDB_NOSYNC});
  // What an opened environment really has, through the Tx's MDB_txn*.
  for (Durability durability :
       {Durability::kNormal, Durability::kFull, Durability::kProcessOnly}) {
    TempDir d;
    ManualClock clock(kT0);
    auto e = OpenEngine({.dir = d.env(), .durability = durability}, &clock);
    ASSERT_TRUE(e);
    unsigned flags = 0;
    MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
      MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
      return mdb_env_get_flags(mdb_txn_env(txn), &flags) == 0 ? Status::OK()
                                                              : Status::Internal("get flags");
    }));
    EXPECT_EQ(flags & (MDB_MAPASYNC | MDB_WRITEMAP | MDB_RDONLY), 0u);
    EXPECT_EQ((flags & MDB_NOMETASYNC) != 0, durability == Durability::kNormal);
    EXPECT_EQ((flags & MDB_NOSYNC) != 0, durability == Durability::kProcessOnly);
    EXPECT_NE(flags & MDB_NOTLS, 0u);
  }
}

// ---- The map: growth and its cap (SPEC §10 StoreFull) -------------------------

TEST(LmdbStore, BodiesRerunAsTheMapGrowsAndNothingIsLostOrDoubled) {
  TempDir d;
  ManualClock clock(kT0);
  LmdbOptions o{.dir = d.env(), .initial_map_bytes = int64_t{64} << 10};
  auto store = OpenLmdbStore(o);
  MQ_ASSERT_OK(store);
  lmdb_internal::Probe* probe = lmdb_internal::ProbeOf(store->get());
  ASSERT_NE(probe, nullptr);
  EngineOptions eo;
  eo.clock = &clock;
  eo.background_maintenance = false;
  auto e = Engine::Open(std::move(*store), eo);
  MQ_ASSERT_OK(e);
  MQ_ASSERT_OK((*e)->CreateQueue({.name = "q"}));
  const std::string body(1000, 'b');
  for (int i = 0; i < 2'000; ++i) MQ_ASSERT_OK((*e)->Send("q", {.body = body + std::to_string(i)}));
  EXPECT_GT(probe->map_full_reruns.load(), 3) << "the map never filled: the test proves nothing";
  auto st = (*e)->Stats("q");
  MQ_ASSERT_OK(st);
  EXPECT_EQ(st->active, 2'000);
  EXPECT_EQ(st->total, 2'000);
  e->reset();
  // Reopened with the same tiny initial size: the map keeps what it grew to.
  auto again = OpenEngine(o, &clock);
  ASSERT_TRUE(again);
  int seen = 0;
  for (;;) {
    auto got = again->Receive("q", {.max_messages = 256, .mode = ReceiveMode::kReceiveAndDelete});
    MQ_ASSERT_OK(got);
    if (got->empty()) break;
    for (const Message& m : *got) EXPECT_EQ(m.body, body + std::to_string(seen++));
  }
  EXPECT_EQ(seen, 2'000);
}

TEST(LmdbStore, AtTheCapSendsAreStoreFullAndTheBacklogStillDrains) {
  TempDir d;
  ManualClock clock(kT0);
  LmdbOptions o{.dir = d.env(), .initial_map_bytes = int64_t{256} << 10,
                .max_map_bytes = int64_t{1} << 20};
  auto e = OpenEngine(o, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
  const std::string body(2000, 'b');
  int sent = 0;
  Status full;
  for (; sent < 10'000; ++sent) {
    auto r = e->Send("q", {.body = body});
    if (!r.ok()) {
      full = r.status();
      break;
    }
  }
  ASSERT_EQ(full.code(), StatusCode::kStoreFull) << full.ToString();
  EXPECT_NE(full.message().find("max_map_bytes"), std::string_view::npos) << full.ToString();
  EXPECT_GT(sent, 100);
  // Drain with Peek-Lock and Complete (which also writes receipts).
  int drained = 0;
  for (;;) {
    auto got = e->Receive("q", {.max_messages = 16});
    MQ_ASSERT_OK(got);
    if (got->empty()) break;
    for (const Message& m : *got) {
      MQ_ASSERT_OK(e->Complete("q", m.seq, m.lock_token));
      ++drained;
    }
  }
  EXPECT_EQ(drained, sent);
  MQ_ASSERT_OK(e->RunMaintenance());
  MQ_ASSERT_OK(e->Send("q", {.body = body}));  // room again
}

// ---- Stale readers (SIGKILLed reader processes) ---------------------------------

// Bytes data.mdb really occupies.
int64_t Allocated(const std::string& dir) {
  struct stat st{};
  EXPECT_EQ(::stat((dir + "/data.mdb").c_str(), &st), 0);
  return static_cast<int64_t>(st.st_blocks) * 512;
}

TEST(LmdbStore, AReaderSlotLeftByASigkilledProcessDoesNotPinPages) {
  TempDir d;
  ManualClock clock(kT0);
  auto e = OpenEngine({.dir = d.env()}, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
  const std::string body(4000, 'b');
  auto round = [&] {
    for (int i = 0; i < 300; ++i) MQ_ASSERT_OK(e->Send("q", {.body = body}));
    for (;;) {
      auto got = e->Receive("q", {.max_messages = 64, .mode = ReceiveMode::kReceiveAndDelete});
      MQ_ASSERT_OK(got);
      if (got->empty()) break;
    }
  };
  round();
  // A process that reads the environment (an operator's inspector) is killed
  // inside a read transaction: its reader slot names a live-looking snapshot.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    if (mdb_env_create(&env) != 0 || mdb_env_set_maxdbs(env, 64) != 0 ||
        mdb_env_open(env, d.env().c_str(), MDB_RDONLY, 0644) != 0 ||
        mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) != 0) {
      ::_exit(3);
    }
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the reader child failed to start";
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ::close(ready[0]);
  ::close(ready[1]);
  // Maintenance clears the dead reader's slot (mdb_reader_check); then churn
  // reuses freed pages instead of growing the file round after round.
  MQ_ASSERT_OK(e->RunMaintenance());
  round();
  const int64_t after_one = Allocated(d.env());
  for (int i = 0; i < 4; ++i) round();
  EXPECT_LE(Allocated(d.env()), after_one + (int64_t{256} << 10))
      << "data.mdb kept growing: the dead reader still pins old pages";
}

// ---- Tx and the MDB_txn* (SPEC §8) ---------------------------------------------

TEST(LmdbStore, TheApplicationsSubDatabaseCommitsAndRollsBackWithTheQueue) {
  TempDir d;
  ManualClock clock(kT0);
  auto e = OpenEngine({.dir = d.env()}, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "outbox"}));
  MDB_dbi orders = 0;
  // Setup step: open (create) the DBI in a Tx that commits.
  MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    return mdb_dbi_open(txn, "orders", MDB_CREATE, &orders) == 0 ? Status::OK()
                                                                 : Status::Internal("dbi");
  }));
  auto put = [&](TxContext& tx, const char* key) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    MDB_val k{std::strlen(key), const_cast<char*>(key)}, v{2, const_cast<char*>("ok")};
    if (mdb_put(txn, orders, &k, &v, 0) != 0) return Status::Internal("put");
    return tx.Send("outbox", {.body = key}).status();
  };
  MQ_ASSERT_OK(e->Tx([&](TxContext& tx) { return put(tx, "order-1"); }));
  Status failed = e->Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(put(tx, "order-2"));
    return Status::InvalidArgument("the application changed its mind");
  });
  EXPECT_EQ(failed.code(), StatusCode::kInvalidArgument);
  auto st = e->Stats("outbox");
  MQ_ASSERT_OK(st);
  EXPECT_EQ(st->active, 1);
  int found = 0;
  MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    for (const char* key : {"order-1", "order-2"}) {
      MDB_val k{std::strlen(key), const_cast<char*>(key)}, v{};
      if (mdb_get(txn, orders, &k, &v) == 0) ++found;
    }
    return Status::OK();
  }));
  EXPECT_EQ(found, 1);
}

TEST(LmdbStore, AHandleThePoisonedApplicationLeftIsDetectedAndNothingCommits) {
  TempDir d;
  ManualClock clock(kT0);
  // Cap = initial: the map cannot grow, so an oversized write poisons the txn.
  LmdbOptions o{.dir = d.env(), .initial_map_bytes = int64_t{1} << 20,
                .max_map_bytes = int64_t{1} << 20};
  auto e = OpenEngine(o, &clock);
  ASSERT_TRUE(e);
  MQ_ASSERT_OK(e->CreateQueue({.name = "q"}));
  MDB_dbi big = 0;
  MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    return mdb_dbi_open(txn, "big", MDB_CREATE, &big) == 0 ? Status::OK() : Status::Internal("dbi");
  }));
  int put_rc = 0;
  Status s = e->Tx([&](TxContext& tx) -> Status {
    MQLITE_RETURN_IF_ERROR(tx.Send("q", {.body = "must not commit"}).status());
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    std::string huge(int64_t{2} << 20, 'x');
    MDB_val k{1, const_cast<char*>("k")}, v{huge.size(), huge.data()};
    put_rc = mdb_put(txn, big, &k, &v, 0);
    return Status::OK();  // the application ignores the error
  });
  EXPECT_EQ(put_rc, MDB_MAP_FULL);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("no longer usable"), std::string_view::npos) << s.ToString();
  auto st = e->Stats("q");
  MQ_ASSERT_OK(st);
  EXPECT_EQ(st->total, 0);
  MQ_ASSERT_OK(e->Send("q", {.body = "the store goes on"}));
}

TEST(LmdbStore, ATxThatFillsTheMapIsUnavailableAndSucceedsWhenRunAgain) {
  TempDir d;
  ManualClock clock(kT0);
  auto e = OpenEngine({.dir = d.env(), .initial_map_bytes = int64_t{1} << 20}, &clock);
  ASSERT_TRUE(e);
  MDB_dbi big = 0;
  MQ_ASSERT_OK(e->Tx([&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    return mdb_dbi_open(txn, "big", MDB_CREATE, &big) == 0 ? Status::OK() : Status::Internal("dbi");
  }));
  auto write_big = [&](TxContext& tx) -> Status {
    MQLITE_ASSIGN_OR_RETURN(MDB_txn * txn, LmdbHandle(tx));
    std::string huge(int64_t{2} << 20, 'x');
    MDB_val k{1, const_cast<char*>("k")}, v{huge.size(), huge.data()};
    const int rc = mdb_put(txn, big, &k, &v, 0);
    return rc == 0 ? Status::OK() : Status::Unavailable(mdb_strerror(rc));
  };
  // Each failed attempt doubles the map; the caller retries on Unavailable.
  Status first = e->Tx(write_big);
  EXPECT_EQ(first.code(), StatusCode::kUnavailable) << first.ToString();
  Status again = first;
  for (int attempt = 0; attempt < 4 && again.code() == StatusCode::kUnavailable; ++attempt) {
    again = e->Tx(write_big);
  }
  EXPECT_TRUE(again.ok()) << again.ToString();
}

// ---- §11 pins: counted cursor steps ---------------------------------------------

class LmdbPin : public ::testing::Test {
 protected:
  std::unique_ptr<tck::StoreFixture> fixture_ = tck::LmdbTckProfile().make_fixture();
};

TEST_F(LmdbPin, ClaimStepsDoNotGrowWithTheBacklog) {
  EXPECT_EQ(tck::LmdbPinClaimIndependentOfBacklog(*fixture_), "");
}
TEST_F(LmdbPin, ClaimTakesAtMostTwoStepsBehindA20kBlockedGroup) {
  EXPECT_EQ(tck::LmdbPinClaimSkipsBlockedGroup(*fixture_), "");
}
TEST_F(LmdbPin, AMaintenanceStepFollowsWhatIsDueNotTheBacklog) {
  EXPECT_EQ(tck::LmdbPinMaintenanceFollowsWhatIsDue(*fixture_), "");
}
TEST_F(LmdbPin, DroppingExpiredRecordsTakesDroppedPlusOneStepsPerKind) {
  EXPECT_EQ(tck::LmdbPinDropExpiredRecords(*fixture_), "");
}

}  // namespace
}  // namespace mqlite
