// The PostgreSQL layout (SPEC §10) on a real server: built once when engines
// open together, a foreign token or someone else's schema refused with
// nothing changed, and the layout the server actually built pinned by a
// golden file (golden/schema.txt; MQLITE_UPDATE_GOLDEN=1 rewrites it after
// a deliberate change, which also needs a new kPostgresSchemaToken).
#include "schema.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pg_test_util.h"
#include "suite_util.h"  // tck/src: the kit's assertion helpers

namespace mqlite::pg_internal {
namespace {

using Params = std::vector<std::optional<std::string>>;

// Each test builds in a schema of its own, dropped afterwards.
class SchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = Connect();
    ASSERT_NE(admin_, nullptr);
    schema_ = "mqlite_t" + std::to_string(::getpid());
    Drop();
  }
  void TearDown() override {
    if (admin_) Drop();
  }
  void Drop() { MQ_EXPECT_OK(admin_->Simple("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE", "drop")); }
  std::string One(const std::string& sql) {
    Result<PgResult> r = admin_->Query(sql, "one value");
    EXPECT_TRUE(r.has_value()) << sql << ": " << r.status().ToString();
    if (!r.has_value() || r->rows() == 0) return "<no row>";
    return r->null(0, 0) ? "<null>" : std::string(r->text(0, 0));
  }
  // Tables, columns, sequences and indexes of the schema as the server has
  // them, with the schema's name replaced by SCHEMA.
  std::string Layout() {
    std::ostringstream out;
    auto dump = [&](const char* title, const char* name, const char* sql) {
      out << "## " << title << "\n";
      const Statement st{name, sql};
      Result<PgResult> r = admin_->Exec(st, Params{schema_});
      EXPECT_TRUE(r.has_value()) << r.status().ToString();
      if (!r.has_value()) return;
      for (int i = 0; i < r->rows(); ++i) {
        for (int c = 0; c < PQnfields(r->get()); ++c) {
          std::string v = r->null(i, c) ? "NULL" : std::string(r->text(i, c));
          for (size_t at; (at = v.find(schema_ + ".")) != std::string::npos;) {
            v.replace(at, schema_.size(), "SCHEMA");
          }
          out << (c ? " | " : "") << v;
        }
        out << "\n";
      }
    };
    dump("columns", "layout_columns",
         "SELECT table_name, column_name, data_type, is_nullable, is_identity,"
         "       coalesce(column_default, '-') FROM information_schema.columns"
         " WHERE table_schema = $1 ORDER BY table_name, ordinal_position");
    dump("sequences", "layout_sequences",
         "SELECT sequence_name, data_type FROM information_schema.sequences"
         " WHERE sequence_schema = $1 ORDER BY 1");
    dump("indexes", "layout_indexes",
         "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 1");
    return out.str();
  }

  std::unique_ptr<PgConn> admin_;
  std::string schema_;
};

TEST(SchemaNameTest, OnlyPlainLowercaseIdentifiers) {
  for (const char* ok : {"mqlite", "_q", "app_queues_2", "a"}) MQ_EXPECT_OK(CheckSchemaName(ok)) << ok;
  for (const std::string& bad : {std::string(), std::string("Mqlite"), std::string("1q"),
                                std::string("a-b"), std::string("a b"), std::string("a;drop"),
                                std::string(64, 'a')}) {
    MQ_EXPECT_CODE(CheckSchemaName(bad), kInvalidArgument) << "'" << bad << "'";
  }
}

// spec.md §9: engines opening a fresh database together build the schema
// once; every one of them then works with it.
TEST_F(SchemaTest, Spec9_EnginesOpeningTogetherBuildItOnce) {
  constexpr int kEngines = 4;
  std::vector<Status> results(kEngines);
  std::vector<std::thread> threads;
  for (int i = 0; i < kEngines; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<PgConn> c = Connect();
      results[i] = c ? EnsureSchema(*c, schema_) : Status::Internal("no connection");
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results) MQ_EXPECT_OK(s);
  EXPECT_EQ(One("SELECT value FROM " + schema_ + ".meta WHERE key = 'schema_token'"),
            kPostgresSchemaToken);
  EXPECT_EQ(One("SELECT count(*) FROM " + schema_ + ".meta"), "1") << "one token row: built once";
}

TEST_F(SchemaTest, Spec10_ReopeningFindsItAndChangesNothing) {
  MQ_ASSERT_OK(EnsureSchema(*admin_, schema_));
  MQ_ASSERT_OK(admin_->Simple(
      "INSERT INTO " + schema_ +
          ".queues (name, lock_duration_ms, max_delivery_count, default_ttl_ms,"
          " dead_letter_on_expire, dedup_window_ms, ordering, dlq_max_age_ms, dlq_max_count,"
          " dlq_max_bytes, max_message_bytes, created_at)"
          " VALUES ('jobs', 30000, 10, 0, false, 0, 0, 0, 0, 0, 262144, 1)",
      "a queue"));
  MQ_ASSERT_OK(EnsureSchema(*admin_, schema_));
  EXPECT_EQ(One("SELECT name FROM " + schema_ + ".queues"), "jobs");
  EXPECT_EQ(admin_->txn_status(), PQTRANS_IDLE);
}

// SPEC §10: data under another token is refused, untouched.
TEST_F(SchemaTest, Spec10_AnotherTokenIsRefusedAndNothingChanges) {
  MQ_ASSERT_OK(EnsureSchema(*admin_, schema_));
  MQ_ASSERT_OK(admin_->Simple("UPDATE " + schema_ + ".meta SET value = 'mqlite-postgres-0'",
                              "an older token"));
  const Status s = EnsureSchema(*admin_, schema_);
  MQ_EXPECT_CODE(s, kSchemaVersionMismatch);
  EXPECT_NE(std::string(s.message()).find("mqlite-postgres-0"), std::string::npos) << s.ToString();
  EXPECT_NE(std::string(s.message()).find(schema_), std::string::npos) << s.ToString();
  EXPECT_EQ(One("SELECT value FROM " + schema_ + ".meta"), "mqlite-postgres-0");
  EXPECT_EQ(admin_->txn_status(), PQTRANS_IDLE);
}

// A schema that holds someone else's tables is not taken over.
TEST_F(SchemaTest, Spec10_SomeoneElsesSchemaIsRefusedAndNothingChanges) {
  MQ_ASSERT_OK(admin_->Simple("CREATE SCHEMA " + schema_, "schema"));
  MQ_ASSERT_OK(admin_->Simple("CREATE TABLE " + schema_ + ".orders (id int)", "theirs"));
  MQ_EXPECT_CODE(EnsureSchema(*admin_, schema_), kSchemaVersionMismatch);
  EXPECT_EQ(One("SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = '" +
                schema_ + "'"),
            "orders");
}

// An empty schema (made by a DBA, say) is used.
TEST_F(SchemaTest, AnEmptySchemaIsBuiltIn) {
  MQ_ASSERT_OK(admin_->Simple("CREATE SCHEMA " + schema_, "schema"));
  MQ_ASSERT_OK(EnsureSchema(*admin_, schema_));
  EXPECT_EQ(One("SELECT value FROM " + schema_ + ".meta"), kPostgresSchemaToken);
}

TEST_F(SchemaTest, Spec10_LayoutGolden) {
  MQ_ASSERT_OK(EnsureSchema(*admin_, schema_));
  const std::string got = "token " + std::string(kPostgresSchemaToken) + "\n" + Layout();
  const std::string path = MQLITE_PG_SCHEMA_GOLDEN;
  if (const char* update = std::getenv("MQLITE_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str())
      << "the layout the server built differs from " << path
      << ". A deliberate change needs a new kPostgresSchemaToken, then MQLITE_UPDATE_GOLDEN=1";
}

}  // namespace
}  // namespace mqlite::pg_internal
