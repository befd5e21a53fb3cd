// mqlite/open.h: store URLs parsed, checked and opened on the real stores.
#include "mqlite/open.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mqlite/engine.h"
#include "pg_server_url.h"

#ifdef MQLITE_OPEN_TEST_POSTGRES
#include <libpq-fe.h>
#endif

namespace mqlite {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "mqlite-open-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

StoreUrl Parsed(const std::string& url) {
  Result<StoreUrl> r = ParseStoreUrl(url);
  EXPECT_TRUE(r.ok()) << url << ": " << r.status().ToString();
  return r.ok() ? *r : StoreUrl{};
}

void ExpectRefused(const std::string& url, StatusCode code, const std::string& needle) {
  Result<StoreUrl> r = ParseStoreUrl(url);
  ASSERT_FALSE(r.ok()) << url << " parsed";
  EXPECT_EQ(r.status().code(), code) << url << ": " << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string_view::npos)
      << url << ": '" << r.status().message() << "' should mention '" << needle << "'";
}

// A store opened from a URL works: a queue round trip through an engine.
void RoundTrip(std::unique_ptr<Store> store, const std::string& queue = "jobs") {
  EngineOptions eo;
  eo.background_maintenance = false;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(std::move(store), eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->CreateQueue({.name = queue}).ok());
  Result<int64_t> seq = (*engine)->Send(queue, {.body = "hello"});
  ASSERT_TRUE(seq.ok()) << seq.status().ToString();
  Result<std::vector<Message>> got = (*engine)->Receive(queue);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].body, "hello");
  EXPECT_TRUE((*engine)->Complete(queue, (*got)[0].seq, (*got)[0].lock_token).ok());
  EXPECT_TRUE((*engine)->Close().ok());
}

TEST(ParseStoreUrlTest, SqlitePathsAsWrittenOrPercentDecoded) {
  EXPECT_EQ(Parsed("sqlite:app.db").location, "app.db");
  EXPECT_EQ(Parsed("sqlite:/var/lib/app/q.db").location, "/var/lib/app/q.db");
  EXPECT_EQ(Parsed("sqlite:///var/lib/q.db").location, "/var/lib/q.db");
  EXPECT_EQ(Parsed("sqlite://rel/q.db").location, "rel/q.db");
  EXPECT_EQ(Parsed("sqlite:what%3Fnow%25.db").location, "what?now%.db");
  EXPECT_EQ(Parsed("sqlite:a b.db").location, "a b.db");
  const StoreUrl u = Parsed("sqlite:q.db?durability=full");
  EXPECT_EQ(u.scheme, "sqlite");
  EXPECT_EQ(u.location, "q.db");
  EXPECT_EQ(u.params.at("durability"), "full");
}

TEST(ParseStoreUrlTest, BadInputIsRefusedNamingTheFault) {
  ExpectRefused("app.db", StatusCode::kInvalidArgument, "has no scheme");
  ExpectRefused("SQLITE:app.db", StatusCode::kInvalidArgument, "has no scheme");
  ExpectRefused("redis://localhost", StatusCode::kInvalidArgument, "unknown store 'redis'");
  ExpectRefused("redis://localhost", StatusCode::kInvalidArgument, "sqlite");  // lists the built
  ExpectRefused("sqlite:", StatusCode::kInvalidArgument, "write sqlite:PATH");
  ExpectRefused("sqlite:?durability=full", StatusCode::kInvalidArgument, "write sqlite:PATH");
  ExpectRefused("lmdb:", StatusCode::kInvalidArgument, "write lmdb:DIR");
  ExpectRefused("sqlite:q.db?durability=fast", StatusCode::kInvalidArgument, "durability=fast");
  ExpectRefused("sqlite:q.db?map_size=1M", StatusCode::kInvalidArgument,
                "unknown sqlite parameter 'map_size'");
  ExpectRefused("sqlite:q.db?durability=full&durability=normal", StatusCode::kInvalidArgument,
                "given twice");
  ExpectRefused("sqlite:q.db?durability", StatusCode::kInvalidArgument, "has no value");
  ExpectRefused("sqlite:100%.db", StatusCode::kInvalidArgument, "percent-escape");
  ExpectRefused("sqlite:x%4", StatusCode::kInvalidArgument, "percent-escape");
  ExpectRefused("memory:somewhere", StatusCode::kInvalidArgument, "takes no location");
  ExpectRefused("memory:?shared=maybe", StatusCode::kInvalidArgument, "not a boolean");
}

TEST(ParseStoreUrlTest, LmdbSizesTakeBinarySuffixes) {
  const StoreUrl u = Parsed("lmdb:/tmp/env?map_size=64MiB&max_map_size=2G&durability=process_only");
  EXPECT_EQ(u.location, "/tmp/env");
  EXPECT_EQ(u.params.size(), 3u);
  for (const char* ok : {"4096", "64K", "64KB", "64kib", "1T", "8MiB"}) {
    EXPECT_TRUE(ParseStoreUrl(std::string("lmdb:d?map_size=") + ok).ok()) << ok;
  }
  for (const char* bad : {"", "M", "12X", "1.5G", "-1", "64MiBs", "99999999999999999999"}) {
    ExpectRefused(std::string("lmdb:d?map_size=") + bad, StatusCode::kInvalidArgument, "size");
  }
  ExpectRefused("lmdb:d?max_map_size=9999999T", StatusCode::kInvalidArgument, "not a size");
}

TEST(ParseStoreUrlTest, PostgresKeepsLibpqParametersAndTakesOutMqlites) {
  const std::vector<std::string> built = BuiltStoreSchemes();
  if (std::find(built.begin(), built.end(), "postgresql") == built.end()) {
    ExpectRefused("postgresql://u@h/db", StatusCode::kUnimplemented, "MQLITE_WITH_POSTGRES=ON");
    return;
  }
  const StoreUrl u = Parsed(
      "postgresql://app@db.internal:5433/queues?sslmode=require&schema=jobs_q&pool_size=4&"
      "application_name=worker&change_feed=off&queue_cache_ms=250&notify_coalesce_ms=0");
  EXPECT_EQ(u.scheme, "postgresql");
  EXPECT_EQ(u.location,
            "postgresql://app@db.internal:5433/queues?sslmode=require&application_name=worker");
  EXPECT_EQ(u.params.at("schema"), "jobs_q");
  EXPECT_EQ(u.params.at("pool_size"), "4");
  EXPECT_EQ(u.params.at("change_feed"), "off");
  EXPECT_EQ(u.params.at("queue_cache_ms"), "250");
  EXPECT_EQ(u.params.at("notify_coalesce_ms"), "0");
  ExpectRefused("postgresql://h/db?queue_cache_ms=3600001", StatusCode::kInvalidArgument,
                "queue_cache_ms");
  ExpectRefused("postgresql://h/db?notify_coalesce_ms=1001", StatusCode::kInvalidArgument,
                "notify_coalesce_ms");
  EXPECT_EQ(Parsed("postgres://h/db").scheme, "postgresql");
  EXPECT_EQ(Parsed("postgres://h/db").location, "postgres://h/db");
  EXPECT_EQ(Parsed("postgresql://h/db?schema=s").location, "postgresql://h/db");
  ExpectRefused("postgresql://h/db?pool_size=0", StatusCode::kInvalidArgument, "1–1024");
  ExpectRefused("postgresql://h/db?pool_size=many", StatusCode::kInvalidArgument, "not a count");
  ExpectRefused("postgresql:h/db", StatusCode::kInvalidArgument, "postgresql://USER@HOST");
}

TEST(ParseStoreUrlTest, SchemesAndHelpListWhatIsBuilt) {
  EXPECT_EQ(KnownStoreSchemes(), (std::vector<std::string>{"sqlite", "lmdb", "postgresql",
                                                           "memory"}));
  const std::vector<std::string> built = BuiltStoreSchemes();
  const std::string help = StoreUrlHelp();
  for (const std::string& s : built) {
    EXPECT_NE(help.find("  " + s + ":"), std::string::npos) << s << " missing from:\n" << help;
  }
  // This build (the tree's CMakeLists) always has the embedded stores.
  for (const char* s : {"sqlite", "lmdb", "memory"}) {
    EXPECT_NE(std::find(built.begin(), built.end(), s), built.end()) << s;
  }
}

TEST(OpenStoreUrlTest, SqliteOpensARealFileAndHoldsItsLock) {
  TempDir dir;
  const std::string path = dir / "q.db";
  Result<std::unique_ptr<Store>> store = OpenStoreUrl("sqlite:" + path + "?durability=full");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ((*store)->Capabilities().name, "sqlite");
  // The store's own refusal comes through unchanged, naming the file.
  Result<std::unique_ptr<Store>> second = OpenStoreUrl("sqlite://" + path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kDbLocked) << second.status().ToString();
  EXPECT_NE(second.status().message().find("q.db"), std::string_view::npos);
  RoundTrip(std::move(*store));
}

TEST(OpenStoreUrlTest, SqliteRefusalChangesNothing) {
  TempDir dir;
  Result<std::unique_ptr<Store>> store = OpenStoreUrl("sqlite:" + (dir / "missing") + "/q.db");
  ASSERT_FALSE(store.ok());
  // docs/sqlite-store.md, Opening: a directory that does not exist.
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_FALSE(fs::exists(dir / "missing"));
}

TEST(OpenStoreUrlTest, LmdbOpensWithAMapSizeAndGrowsPastIt) {
  TempDir dir;
  const std::string env = dir / "env";
  Result<std::unique_ptr<Store>> store =
      OpenStoreUrl("lmdb:" + env + "?map_size=256KiB&max_map_size=64MiB");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE(fs::exists(env + "/data.mdb"));
  EngineOptions eo;
  eo.background_maintenance = false;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(std::move(*store), eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->CreateQueue({.name = "jobs"}).ok());
  // 2 MiB of bodies through a 256 KiB initial map: the map grows.
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE((*engine)->Send("jobs", {.body = std::string(32 << 10, 'x')}).ok()) << i;
  }
  EXPECT_GT(fs::file_size(env + "/data.mdb"), uint64_t{256} << 10);
  ASSERT_TRUE((*engine)->Close().ok());
  // Reopened without parameters: the data is there, the store works.
  Result<std::unique_ptr<Store>> again = OpenStoreUrl("lmdb://" + env);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  Result<std::unique_ptr<Engine>> reopened = Engine::Open(std::move(*again), eo);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  Result<QueueStats> stats = (*reopened)->Stats("jobs");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->active, 64);
  ASSERT_TRUE((*reopened)->Close().ok());
  Result<std::unique_ptr<Store>> third = OpenStoreUrl("lmdb://" + env);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  RoundTrip(std::move(*third), "other");
}

// read_only=true (StoreCapabilities::read_only), on both embedded stores:
// no lock, no recovery, no writes, nothing created. The cross-process case
// (inspecting a store another process runs) is cli_test.cc's.
class ReadOnlyOpenTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The store's URL in `dir` ("sqlite:DIR/q.db" or "lmdb:DIR/env").
  std::string Url(const std::string& extra = "") const {
    const std::string base = GetParam() == "sqlite" ? "sqlite:" + dir_ / "q.db" : "lmdb:" + dir_ / "env";
    return base + extra;
  }
  std::string DataFile() const { return GetParam() == "sqlite" ? dir_ / "q.db" : dir_ / "env/data.mdb"; }
  TempDir dir_;
};

TEST_P(ReadOnlyOpenTest, AMissingStoreIsNotFoundAndNotCreated) {
  Result<std::unique_ptr<Store>> s = OpenStoreUrl(Url("?read_only=true"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound) << s.status().ToString();
  EXPECT_TRUE(fs::is_empty(dir_ / "")) << "the open created something";
}

TEST_P(ReadOnlyOpenTest, ReadsWhatWasCommittedLeavesLeasesAndRefusesWrites) {
  EngineOptions eo;
  eo.background_maintenance = false;
  int64_t locked_seq = 0;
  {
    Result<std::unique_ptr<Store>> s = OpenStoreUrl(Url());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(*s), eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE((*e)->CreateQueue({.name = "jobs"}).ok());
    ASSERT_TRUE((*e)->Send("jobs", {.body = "a"}).ok());
    ASSERT_TRUE((*e)->Send("jobs", {.body = "b"}).ok());
    Result<std::vector<Message>> got = (*e)->Receive("jobs");
    ASSERT_TRUE(got.ok() && got->size() == 1);
    locked_seq = (*got)[0].seq;
    ASSERT_TRUE((*e)->Close().ok());  // the lease stays in the file, as after a crash
  }
  const auto size_before = fs::file_size(DataFile());
  {
    Result<std::unique_ptr<Store>> s = OpenStoreUrl(Url("?read_only=yes"));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->Capabilities().read_only);
    // One inspection per file per process (LMDB must never be opened twice
    // in a process), and no engine of this process may take it meanwhile.
    Result<std::unique_ptr<Store>> twice = OpenStoreUrl(Url("?read_only=true"));
    ASSERT_FALSE(twice.ok());
    EXPECT_EQ(twice.status().code(), StatusCode::kDbLocked) << twice.status().ToString();
    Result<std::unique_ptr<Store>> writer = OpenStoreUrl(Url());
    ASSERT_FALSE(writer.ok());
    EXPECT_EQ(writer.status().code(), StatusCode::kDbLocked) << writer.status().ToString();

    Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(*s), eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    Result<std::vector<Message>> peek = (*e)->Peek("jobs", {});
    ASSERT_TRUE(peek.ok()) << peek.status().ToString();
    ASSERT_EQ(peek->size(), 2u);
    // No recovery at open: the lease is not an orphan to an inspector.
    EXPECT_EQ((*peek)[0].seq, locked_seq);
    EXPECT_EQ((*peek)[0].state, MessageState::kLocked);
    Result<QueueStats> st = (*e)->Stats("jobs");
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->locked, 1);
    EXPECT_EQ(st->active, 1);
    Result<std::vector<QueueConfig>> queues = (*e)->ListQueues();
    ASSERT_TRUE(queues.ok() && queues->size() == 1);
    // Every write is refused, having done nothing.
    for (Status w : {(*e)->Send("jobs", {.body = "c"}).status(),
                     (*e)->Receive("jobs").status(),
                     (*e)->CreateQueue({.name = "other"}).status(),
                     (*e)->RunMaintenance().status()}) {
      EXPECT_EQ(w.code(), StatusCode::kInvalidArgument) << w.ToString();
      EXPECT_NE(w.message().find("read-only"), std::string_view::npos) << w.ToString();
    }
    ASSERT_TRUE((*e)->Close().ok());
  }
  EXPECT_EQ(fs::file_size(DataFile()), size_before);
  // An ordinary open afterwards recovers as always (SPEC §7.1).
  Result<std::unique_ptr<Store>> s = OpenStoreUrl(Url());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Result<std::unique_ptr<Engine>> e = Engine::Open(std::move(*s), eo);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Result<QueueStats> st = (*e)->Stats("jobs");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->locked, 0);
  EXPECT_EQ(st->active, 2);
  ASSERT_TRUE((*e)->Close().ok());
}

TEST_P(ReadOnlyOpenTest, AStoreWithoutAnMqliteSchemaIsRefused) {
  // An empty store file of the right kind, with no mqlite schema.
  if (GetParam() == "sqlite") {
    std::ofstream(dir_ / "q.db").close();  // SQLite treats an empty file as an empty database
  } else {
    fs::create_directory(dir_ / "env");
    std::ofstream(dir_ / "env/data.mdb").close();
  }
  Result<std::unique_ptr<Store>> s = OpenStoreUrl(Url("?read_only=true"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  EXPECT_NE(s.status().message().find("no mqlite schema"), std::string_view::npos)
      << s.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Embedded, ReadOnlyOpenTest, ::testing::Values("sqlite", "lmdb"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(OpenStoreUrlTest, MemoryIsAFreshStoreEachTime) {
  Result<std::unique_ptr<Store>> a = OpenStoreUrl("memory:");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  Result<std::unique_ptr<Store>> b = OpenStoreUrl("memory:?shared=true");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_FALSE((*b)->Capabilities().exclusive);
  EXPECT_TRUE((*a)->Capabilities().exclusive);
  RoundTrip(std::move(*a));
  RoundTrip(std::move(*b));
}

#ifdef MQLITE_OPEN_TEST_POSTGRES
TEST(OpenStoreUrlTest, PostgresErrorsHideThePassword) {
  // Nothing listens on port 1 of loopback: Unavailable, and the message
  // names the URL without its password.
  Result<std::unique_ptr<Store>> s =
      OpenStoreUrl("postgresql://app:s3cret@127.0.0.1:1/db?connect_timeout=2&pool_size=1");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().ToString();
  EXPECT_EQ(s.status().ToString().find("s3cret"), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().ToString().find("app:***@127.0.0.1:1"), std::string::npos)
      << s.status().ToString();
}

TEST(OpenPostgresTest, OpensTheServerWithMqlitesParameters) {
  const std::string base = test::PgServerUrl();
  ASSERT_FALSE(base.empty());
  const std::string schema = "mqlite_open_" + std::to_string(getpid());
  const std::string sep = base.find('?') == std::string::npos ? "?" : "&";
  Result<std::unique_ptr<Store>> store = OpenStoreUrl(
      base + sep + "schema=" + schema + "&pool_size=2&change_feed=off&durability=process_only");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Capabilities().name, "postgres");
  RoundTrip(std::move(*store));
  // The schema named in the URL is the one the store built.
  PGconn* c = PQconnectdb(base.c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  const std::string q = "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '" +
                        schema + "'";
  PGresult* r = PQexec(c, q.c_str());
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(c);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "1");
  PQclear(r);
  PQclear(PQexec(c, ("DROP SCHEMA " + schema + " CASCADE").c_str()));
  PQfinish(c);
}
#endif

}  // namespace
}  // namespace mqlite
