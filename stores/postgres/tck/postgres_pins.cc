#include "postgres_pins.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mqlite/engine.h"
#include "pg_conn.h"
#include "queries.h"

namespace mqlite::tck {
namespace {

using pg_internal::PgConn;
using pg_internal::PgQueries;
using pg_internal::PgResult;
using pg_internal::Q;

// Literals for the statements' parameters.
constexpr char kToken[] = "'\\x00112233445566778899aabbccddeeff'::bytea";
constexpr char kGroup[] = "'\\x67'::bytea";  // "g"
constexpr char kKey[] = "'\\x6b6579'::bytea";

// How one statement must be planned on the 100k-row data set: the index it
// must use (empty: any, or it touches no table), and what it may do that the
// rest may not, with the reason.
struct Expect {
  Q q;
  std::vector<std::string> params;  // SQL literals, $1.. in order ("{Q}" = the pin queue id)
  std::string index;  // comma-separated: every one must be used
  bool may_scan = false;  // a Seq Scan of its table is allowed (with why)
  bool may_sort = false;  // a Sort node is allowed (with why)
  const char* why = "";
};

std::vector<Expect> Expectations() {
  const std::string now = "1700000500000";
  return {
      {Q::kXactLock, {"42"}, ""},
      {Q::kXactLockMany, {"'{3,1,2}'"}, "", false, true, "sorts the batch's own lock keys"},
      {Q::kXactTryLock, {"42"}, ""},
      {Q::kSessionTryLock, {"42"}, ""},
      {Q::kSessionUnlock, {"42"}, ""},
      {Q::kQueueHasMessages, {"{Q}"}, ""},
      {Q::kUpdateQueue,
       {"1", "2", "3", "false", "5", "0", "7", "8", "9", "10", "{Q}"},
       ""},
      {Q::kInsertQueue,
       {"1", "2", "3", "false", "5", "0", "7", "8", "9", "10", "'x'", "0"},
       ""},
      {Q::kGetQueue, {"'pin'"}, ""},
      {Q::kListQueues, {}, "", true, true, "lists every queue by name: the queues table is small"},
      {Q::kDeleteQueueMessages, {"{Q}"}, "", true, false,
       "deletes the whole queue: proportional to the queue by definition"},
      {Q::kDeleteQueueRow, {"{Q}"}, ""},
      {Q::kInsertMessage,
       {"{Q}", "0", "true", "0", kGroup, now, now, "0", "NULL", "NULL", "NULL", "NULL", "NULL",
        "NULL", "'\\x78'::bytea", "1"},
       ""},
      {Q::kGroupHasLive, {"{Q}", kGroup}, "messages_group"},
      {Q::kPromoteNextHead, {"{Q}", kGroup}, "messages_group"},
      {Q::kClaimCandidates, {"{Q}", "10"}, "messages_claim"},
      {Q::kClaimAllOrNothing, {"{Q}", "10", now, "10", kToken, "16", now}, "messages_claim", false,
       true, "numbers and orders the batch's own candidates (at most max_messages rows)"},
      {Q::kPromoteAndClaim, {"{Q}", "10", now, "10", kToken, "16", now, "16"},
       "messages_claim,messages_due,messages_lease", false, true,
       "numbers and orders the batch's own candidates (at most max_messages rows)"},
      {Q::kLockMessage, {"5", "0", kToken, now}, "messages_pkey"},
      {Q::kDeleteReturning, {"5"}, "messages_pkey"},
      {Q::kLoadRefForUpdate, {"5", "{Q}"}, "messages_pkey"},
      {Q::kLockUngrouped, {"5", "{Q}"}, "messages_pkey"},
      {Q::kCasUnlock, {"5", "1", kToken, now, "0"}, "messages_pkey"},
      {Q::kCasUnlockScheduled, {"5", "1", kToken, now, now}, "messages_pkey"},
      {Q::kCasRenew, {"5", "1", kToken, now, now}, "messages_pkey"},
      {Q::kCasDeadLetter, {"5", "1", kToken, now, now, kKey, "NULL"}, "messages_pkey"},
      {Q::kCasDelete, {"5", "1", kToken, now}, "messages_pkey"},
      {Q::kCompleteUngrouped, {"5", "{Q}", kToken, now}, "messages_pkey"},
      {Q::kCompleteWithReceipt, {"5", "{Q}", kToken, now, kKey, now}, "messages_pkey"},
      {Q::kPeek, {"{Q}", "0", "100", "NULL"}, "messages_state", false, true,
       "merges the per-state seeks' few rows by seq"},
      {Q::kStats, {"{Q}", now, "257"}, "messages_age,messages_due,messages_lease", true, true,
       "counts every message of the queue per state (Stats' totals, proportional to the queue "
       "by definition); the oldest-claimable walks each seek their index"},
      {Q::kOldestDeadLocked, {"{Q}", now, "100"}, "messages_dlq"},
      {Q::kGetGroupId, {"5"}, "messages_pkey"},
      {Q::kRedriveInsert, {"{Q}", "true", kGroup, now, "0", "5"}, "messages_pkey"},
      {Q::kPromoteDue, {"{Q}", now, "100"}, "messages_due,messages_lease"},
      {Q::kExpiredLeases, {"{Q}", now, "100"}, "messages_lease"},
      {Q::kExpiredTtl, {"{Q}", now, "100"}, "messages_ttl"},
      {Q::kDlqTotals, {"{Q}"}, "messages_dlq", false, false,
       "reads every dead letter of the queue (retention's totals): proportional to the DLQ"},
      {Q::kRetentionCandidates, {"{Q}", "100"}, "messages_dlq"},
      {Q::kFindDedup, {"{Q}", kKey, now}, "dedup_pkey"},
      {Q::kPutDedup, {"{Q}", kKey, "5", kKey, now}, ""},
      {Q::kFindReceipt, {kKey, now}, "receipts_pkey"},
      {Q::kPutReceipt, {kKey, now}, ""},
      {Q::kFindAttempt, {kKey, now}, "attempts_pkey"},
      {Q::kPutAttempt, {kKey, "{Q}", "0", kKey, now}, ""},
      {Q::kDropDedup, {now, "100"}, "dedup_expiry"},
      {Q::kDropReceipts, {now, "100"}, "receipts_expiry"},
      {Q::kDropAttempts, {now, "100"}, "attempts_expiry"},
  };
}

std::string Replace(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// The backlog tables a plan must seek, never scan.
bool BigTable(std::string_view relation) {
  return relation == "messages" || relation == "dedup" || relation == "receipts" ||
         relation == "attempts";
}

// Every value of `"key": "..."` in a JSON plan, in order.
std::vector<std::string> Values(std::string_view json, std::string_view key) {
  std::vector<std::string> out;
  const std::string needle = "\"" + std::string(key) + "\": \"";
  for (size_t at = json.find(needle); at != std::string_view::npos;
       at = json.find(needle, at + 1)) {
    const size_t start = at + needle.size();
    out.emplace_back(json.substr(start, json.find('"', start) - start));
  }
  return out;
}

// "Seq Scan on messages" style lines of a JSON plan: each node's type and
// relation (if any), in document order.
std::vector<std::pair<std::string, std::string>> Nodes(std::string_view json) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string type = "\"Node Type\": \"";
  for (size_t at = json.find(type); at != std::string_view::npos; at = json.find(type, at + 1)) {
    const size_t start = at + type.size();
    std::string t(json.substr(start, json.find('"', start) - start));
    std::string rel;
    const size_t next = json.find(type, start);
    const size_t r = json.find("\"Relation Name\": \"", start);
    if (r != std::string_view::npos && (next == std::string_view::npos || r < next)) {
      const size_t rs = r + 18;
      rel = std::string(json.substr(rs, json.find('"', rs) - rs));
    }
    out.emplace_back(std::move(t), std::move(rel));
  }
  return out;
}

Status Sql(PgConn& c, const std::string& sql, std::string_view what) {
  return c.Simple(sql, what);
}

// The data set: 100,000 messages in queue `pin` (20,000 members of one
// group blocked behind a locked head, 30,000 active heads, 20,000 scheduled,
// 15,000 locked, 10,000 dead letters, 5,000 expiring), 20,000 records of
// each idempotency kind, then ANALYZE.
Status Fill(PgConn& c, const std::string& s, int64_t q) {
  const std::string ins =
      "INSERT INTO " + s +
      ".messages (seq, queue_id, state, is_head, priority, group_key, enqueued_at, visible_at, "
      "expires_at, delivery_count, locked_until, lock_token, dead_lettered_at, "
      "dead_letter_reason, dead_letter_description, message_id, group_id, subject, "
      "correlation_id, content_type, properties, body, body_size) SELECT nextval('" +
      s + ".message_seq'), " + std::to_string(q) + ", ";
  const std::string tail = ", NULL, NULL, NULL, NULL, '\\x78'::bytea, 1 FROM generate_series(1, ";
  const std::string t0 = "1700000000000";
  const std::vector<std::string> parts = {
      // the locked head of group g, then its blocked members
      ins + "1, true, 0, '\\x67'::bytea, " + t0 + ", " + t0 + ", 0, 1, 1800000000000, " +
          kToken + ", 0, NULL, NULL, NULL, '\\x67'::bytea" + tail + "1)",
      ins + "0, false, 0, '\\x67'::bytea, " + t0 + "+i, " + t0 + ", 0, 0, 0, NULL, 0, NULL, "
          "NULL, NULL, '\\x67'::bytea" + tail + "20000) i",
      ins + "0, true, (i % 10)::smallint, NULL, " + t0 + "+i, " + t0 + ", 0, 0, 0, NULL, 0, "
          "NULL, NULL, NULL, NULL" + tail + "30000) i",
      ins + "3, true, 0, NULL, " + t0 + ", 1800000000000+i, 0, 0, 0, NULL, 0, NULL, NULL, "
          "NULL, NULL" + tail + "20000) i",
      ins + "1, true, 0, NULL, " + t0 + ", " + t0 + ", 0, 1, 1800000000000+i, " + kToken +
          ", 0, NULL, NULL, NULL, NULL" + tail + "15000) i",
      ins + "4, false, 0, NULL, " + t0 + ", " + t0 + ", 0, 10, 0, NULL, 1700000000000+i, "
          "'\\x78'::bytea, NULL, NULL, NULL" + tail + "10000) i",
      ins + "0, true, 0, NULL, " + t0 + ", " + t0 + ", 1800000000000+i, 0, 0, NULL, 0, NULL, "
          "NULL, NULL, NULL" + tail + "5000) i",
      "INSERT INTO " + s + ".dedup SELECT " + std::to_string(q) +
          ", int8send(i), i, '\\x00'::bytea, 1800000000000+i FROM generate_series(1, 20000) i",
      "INSERT INTO " + s +
          ".receipts SELECT int8send(i), 1800000000000+i FROM generate_series(1, 20000) i",
      "INSERT INTO " + s + ".attempts SELECT int8send(i), " + std::to_string(q) +
          ", 0, '\\x00'::bytea, 1800000000000+i FROM generate_series(1, 20000) i",
      "ANALYZE " + s + ".messages, " + s + ".dedup, " + s + ".receipts, " + s + ".attempts, " +
          s + ".queues",
  };
  for (const std::string& sql : parts) MQLITE_RETURN_IF_ERROR(Sql(c, sql, "fill the pin data"));
  return Status::OK();
}

Result<int64_t> QueueId(PgConn& c, const std::string& s, const std::string& name) {
  MQLITE_ASSIGN_OR_RETURN(PgResult r,
                          c.Query("SELECT id FROM " + s + ".queues WHERE name = '" + name + "'",
                                  "queue id"));
  if (r.rows() != 1) return Status::Internal("pin: queue " + name + " missing");
  return r.i64(0, 0);
}

// The shared buffers a claim of 10 touches (EXPLAIN ANALYZE, BUFFERS) in a
// transaction rolled back afterwards.
Result<int64_t> ClaimBuffers(PgConn& c, const PgQueries& qs, int64_t q) {
  const std::string sql = Replace(Replace(qs[Q::kClaimCandidates].sql, "$1", std::to_string(q)),
                                  "$2", "10");
  MQLITE_RETURN_IF_ERROR(c.Simple("BEGIN", "begin"));
  auto r = c.Query("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, "explain claim");
  c.Rollback();
  if (!r.has_value()) return r.error();
  const std::string json(r->text(0, 0));
  int64_t total = 0;
  for (std::string_view key : {"\"Shared Hit Blocks\": ", "\"Shared Read Blocks\": "}) {
    const size_t at = json.find(key);  // the top node's figures include its children's
    if (at != std::string::npos) total += std::stoll(json.substr(at + key.size()));
  }
  return total;
}

}  // namespace

Status RunPostgresPlanPins(StoreFixture& fixture, const std::string& url,
                           const std::string& schema) {
  auto store = fixture.Open();
  if (!store.has_value()) return store.error();
  EngineOptions eo;
  eo.background_maintenance = false;
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(std::move(*store), eo));
  for (const char* name : {"pin", "b50", "b20k"}) {
    MQLITE_RETURN_IF_ERROR(engine->CreateQueue({.name = name}).status());
  }
  MQLITE_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> c, PgConn::Connect(url));
  MQLITE_ASSIGN_OR_RETURN(int64_t pin, QueueId(*c, schema, "pin"));
  MQLITE_RETURN_IF_ERROR(Fill(*c, schema, pin));

  std::string failures;
  const PgQueries qs(schema);
  int n = 0;
  for (const Expect& e : Expectations()) {
    ++n;
    std::string args;
    for (size_t i = 0; i < e.params.size(); ++i) {
      args += (i ? ", " : "") + Replace(e.params[i], "{Q}", std::to_string(pin));
    }
    const std::string name = std::string("pin_") + qs[e.q].name;
    MQLITE_RETURN_IF_ERROR(c->Simple("PREPARE " + name + " AS " + qs[e.q].sql, "prepare"));
    // A prepared statement runs on custom plans first and may switch to the
    // generic plan; one planned each time only ever has custom plans.
    std::vector<const char*> modes = {"force_custom_plan"};
    if (!qs[e.q].plan_each_time) modes.push_back("force_generic_plan");
    for (const char* mode : modes) {
      MQLITE_RETURN_IF_ERROR(c->Simple(std::string("SET plan_cache_mode = ") + mode, "mode"));
      auto r = c->Query("EXPLAIN (FORMAT JSON) EXECUTE " + name +
                            (args.empty() ? "" : "(" + args + ")"),
                        "explain");
      if (!r.has_value()) return r.error();
      const std::string json(r->text(0, 0));
      const std::string where = std::string(qs[e.q].name) + " (" + mode + "): ";
      for (const auto& [type, rel] : Nodes(json)) {
        if (type == "Seq Scan" && BigTable(rel) && !e.may_scan) {
          failures += where + "Seq Scan on " + rel + "\n";
        }
        if (type == "Sort" && !e.may_sort) failures += where + "Sort\n";
      }
      const auto used = Values(json, "Index Name");
      for (size_t from = 0; from < e.index.size();) {  // every index the list names
        size_t to = e.index.find(',', from);
        if (to == std::string::npos) to = e.index.size();
        const std::string index = e.index.substr(from, to - from);
        if (std::find(used.begin(), used.end(), index) == used.end()) {
          failures += where + "does not use " + index + "\n";
        }
        from = to + 1;
      }
    }
    MQLITE_RETURN_IF_ERROR(c->Simple("DEALLOCATE " + name, "deallocate"));
  }
  if (n != static_cast<int>(Q::kCount)) {
    failures += "the pin table covers " + std::to_string(n) + " of " +
                std::to_string(static_cast<int>(Q::kCount)) + " statements\n";
  }

  // Equal buffers for a claim of 10 behind 50 and behind 20,000 blocked
  // members of a group whose head is locked.
  for (const auto& [queue, members] : {std::pair{"b50", 50}, std::pair{"b20k", 20'000}}) {
    MQLITE_ASSIGN_OR_RETURN(int64_t id, QueueId(*c, schema, queue));
    const std::string q = std::to_string(id);
    MQLITE_RETURN_IF_ERROR(c->Simple(
        "INSERT INTO " + schema + ".messages SELECT nextval('" + schema + ".message_seq'), " + q +
            ", CASE WHEN i = 0 THEN 1 ELSE 0 END, i = 0, 9, '\\x67'::bytea, i, 0, 0, 0, 0, NULL, "
            "0, NULL, NULL, NULL, '\\x67'::bytea, NULL, NULL, NULL, NULL, '\\x78'::bytea, 1 "
            "FROM generate_series(0, " + std::to_string(members) + ") i",
        "fill blocked"));
    MQLITE_RETURN_IF_ERROR(c->Simple(
        "INSERT INTO " + schema + ".messages SELECT nextval('" + schema + ".message_seq'), " + q +
            ", 0, true, 0, NULL, i, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, "
            "NULL, NULL, '\\x78'::bytea, 1 FROM generate_series(1, 10) i",
        "fill free"));
  }
  MQLITE_RETURN_IF_ERROR(c->Simple("ANALYZE " + schema + ".messages", "analyze"));
  MQLITE_ASSIGN_OR_RETURN(int64_t b50, QueueId(*c, schema, "b50"));
  MQLITE_ASSIGN_OR_RETURN(int64_t b20k, QueueId(*c, schema, "b20k"));
  // Once each to settle hint bits and the visibility map, then measured.
  MQLITE_RETURN_IF_ERROR(ClaimBuffers(*c, qs, b50).status());
  MQLITE_RETURN_IF_ERROR(ClaimBuffers(*c, qs, b20k).status());
  MQLITE_ASSIGN_OR_RETURN(int64_t buf50, ClaimBuffers(*c, qs, b50));
  MQLITE_ASSIGN_OR_RETURN(int64_t buf20k, ClaimBuffers(*c, qs, b20k));
  if (buf50 != buf20k) {
    failures += "claim of 10: " + std::to_string(buf50) + " buffers behind 50 blocked, " +
                std::to_string(buf20k) + " behind 20,000 (want equal)\n";
  }
  MQLITE_RETURN_IF_ERROR(engine->Close());
  if (!failures.empty()) return Status::Internal("plan pins:\n" + failures);
  return Status::OK();
}

}  // namespace mqlite::tck
