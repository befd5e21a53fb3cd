#include "schema.h"

#include <optional>

namespace mqlite {
const char* const kPostgresSchemaToken = "mqlite-postgres-1";
}  // namespace mqlite

namespace mqlite::pg_internal {

std::string FillSchema(std::string_view tmpl, std::string_view schema) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl.compare(i, 3, "{s}") == 0) {
      out += schema;
      i += 2;
    } else {
      out += tmpl[i];
    }
  }
  return out;
}

namespace {

constexpr const char* kDdl[] = {
    "CREATE SCHEMA IF NOT EXISTS {s}",

    "CREATE TABLE {s}.meta (\n"
    "  key   text PRIMARY KEY,\n"
    "  value text NOT NULL\n"
    ")",

    "CREATE TABLE {s}.queues (\n"
    "  id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n"
    "  name                  text NOT NULL UNIQUE,\n"
    "  lock_duration_ms      bigint NOT NULL,\n"
    "  max_delivery_count    integer NOT NULL,\n"
    "  default_ttl_ms        bigint NOT NULL,\n"
    "  dead_letter_on_expire boolean NOT NULL,\n"
    "  dedup_window_ms       bigint NOT NULL,\n"
    "  ordering              smallint NOT NULL,\n"
    "  dlq_max_age_ms        bigint NOT NULL,\n"
    "  dlq_max_count         bigint NOT NULL,\n"
    "  dlq_max_bytes         bigint NOT NULL,\n"
    "  max_message_bytes     bigint NOT NULL,\n"
    "  created_at            bigint NOT NULL\n"
    ")",

    // SPEC §3: never reused, even after the newest message is deleted.
    "CREATE SEQUENCE {s}.message_seq AS bigint",

    "CREATE TABLE {s}.messages (\n"
    "  seq                     bigint PRIMARY KEY,\n"
    "  queue_id                bigint NOT NULL,\n"
    "  state                   smallint NOT NULL,\n"
    "  is_head                 boolean NOT NULL,\n"
    "  priority                smallint NOT NULL,\n"
    "  group_key               bytea,\n"
    "  enqueued_at             bigint NOT NULL,\n"
    "  visible_at              bigint NOT NULL,\n"
    "  expires_at              bigint NOT NULL,\n"
    "  delivery_count          integer NOT NULL,\n"
    "  locked_until            bigint NOT NULL,\n"
    "  lock_token              bytea,\n"
    "  dead_lettered_at        bigint NOT NULL,\n"
    "  dead_letter_reason      bytea,\n"
    "  dead_letter_description bytea,\n"
    "  message_id              bytea,\n"
    "  group_id                bytea,\n"
    "  subject                 bytea,\n"
    "  correlation_id          bytea,\n"
    "  content_type            bytea,\n"
    "  properties              bytea,\n"
    "  body                    bytea NOT NULL,\n"
    "  body_size               integer NOT NULL\n"
    ")",

    // Claim: active heads in delivery order.
    "CREATE INDEX messages_claim ON {s}.messages (queue_id, priority DESC, seq)\n"
    "  WHERE state = 0 AND is_head",
    // Next head of a group.
    "CREATE INDEX messages_group ON {s}.messages (queue_id, group_key, seq)\n"
    "  WHERE group_key IS NOT NULL AND state <> 4",
    // Active heads by age: Stats' oldest claimable message (a redriven
    // message keeps its enqueued_at under a new seq).
    "CREATE INDEX messages_age ON {s}.messages (queue_id, enqueued_at)\n"
    "  WHERE state = 0 AND is_head",
    // Scheduled by due time.
    "CREATE INDEX messages_due ON {s}.messages (queue_id, visible_at)\n"
    "  WHERE state = 3",
    // Leases by expiry.
    "CREATE INDEX messages_lease ON {s}.messages (queue_id, locked_until)\n"
    "  WHERE state = 1",
    // TTL by deadline (a locked message expires only once its lease ends).
    "CREATE INDEX messages_ttl ON {s}.messages (queue_id, expires_at)\n"
    "  WHERE expires_at > 0 AND state IN (0, 2, 3)",
    // Dead letters, oldest first (retention, redrive, purge).
    "CREATE INDEX messages_dlq ON {s}.messages (queue_id, dead_lettered_at, seq)\n"
    "  WHERE state = 4",
    // Peek by state, stats, queue deletion.
    "CREATE INDEX messages_state ON {s}.messages (queue_id, state, seq)",

    // SPEC §4: dedup records outlive their message for the whole window.
    "CREATE TABLE {s}.dedup (\n"
    "  queue_id   bigint NOT NULL,\n"
    "  key        bytea NOT NULL,\n"
    "  seq        bigint NOT NULL,\n"
    "  body_hash  bytea NOT NULL,\n"
    "  expires_at bigint NOT NULL,\n"
    "  PRIMARY KEY (queue_id, key)\n"
    ")",
    "CREATE INDEX dedup_expiry ON {s}.dedup (expires_at)",

    // SPEC §7.2: settlement receipts, keyed by seq then the request (keys.cc).
    "CREATE TABLE {s}.receipts (\n"
    "  key        bytea PRIMARY KEY,\n"
    "  expires_at bigint NOT NULL\n"
    ")",
    "CREATE INDEX receipts_expiry ON {s}.receipts (expires_at)",

    // SPEC §7.3: receive attempts and the batch each returned.
    "CREATE TABLE {s}.attempts (\n"
    "  attempt_id bytea PRIMARY KEY,\n"
    "  queue_id   bigint NOT NULL,\n"
    "  mode       smallint NOT NULL,\n"
    "  payload    bytea NOT NULL,\n"
    "  expires_at bigint NOT NULL\n"
    ")",
    "CREATE INDEX attempts_expiry ON {s}.attempts (expires_at)",

    // spec.md §9: the engines using the store and their retention defaults;
    // each row is guarded by its engine's session advisory lock, so a row
    // whose lock nobody holds belongs to an engine that is gone.
    "CREATE TABLE {s}.engines (\n"
    "  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n"
    "  dlq_max_age_ms bigint NOT NULL,\n"
    "  dlq_max_count  bigint NOT NULL,\n"
    "  dlq_max_bytes  bigint NOT NULL,\n"
    "  registered_at  bigint NOT NULL\n"
    ")",

    "INSERT INTO {s}.meta (key, value) VALUES ('schema_token', $TOKEN$)",
};

}  // namespace

Status CheckSchemaName(std::string_view schema) {
  bool ok = !schema.empty() && schema.size() <= 63 && !(schema[0] >= '0' && schema[0] <= '9');
  for (char c : schema) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (ok) return Status::OK();
  return Status::InvalidArgument("PostgreSQL store: schema name '" + std::string(schema) +
                                 "' is not 1–63 bytes of [a-z0-9_] starting with a letter or _");
}

std::vector<std::string> SchemaDdl(std::string_view schema) {
  std::vector<std::string> out;
  for (const char* t : kDdl) {
    std::string s = FillSchema(t, schema);
    const std::string_view tok = "$TOKEN$";
    if (const size_t at = s.find(tok); at != std::string::npos) {
      s.replace(at, tok.size(), std::string("'") + kPostgresSchemaToken + "'");
    }
    out.push_back(std::move(s));
  }
  return out;
}

Status EnsureSchema(PgConn& conn, std::string_view schema) {
  MQLITE_RETURN_IF_ERROR(CheckSchemaName(schema));
  const std::string s(schema);
  const std::string where = "PostgreSQL store (" + conn.where() + ") schema '" + s + "'";
  MQLITE_RETURN_IF_ERROR(conn.Simple("BEGIN", "begin building the schema"));
  Status st = [&]() -> Status {
    // Serialises building one schema: (class 'mqlt', a hash of its name),
    // held until this transaction ends.
    static const Statement kLock{
        "mqlite_schema_lock", "SELECT pg_advisory_xact_lock(1836150132, hashtext($1))"};
    MQLITE_RETURN_IF_ERROR(conn.Exec(kLock, std::vector<std::optional<std::string>>{s}).status());
    // What is there: the token if the meta table exists, and how many
    // tables the schema holds.
    static const Statement kLook{
        "mqlite_schema_look",
        "SELECT to_regclass(quote_ident($1) || '.meta') IS NOT NULL,"
        "       (SELECT count(*) FROM pg_tables WHERE schemaname = $1)"};
    MQLITE_ASSIGN_OR_RETURN(PgResult look,
                            conn.Exec(kLook, std::vector<std::optional<std::string>>{s}));
    const bool has_meta = look.text(0, 0) == "t";
    const int64_t tables = look.i64(0, 1);
    if (has_meta) {
      MQLITE_ASSIGN_OR_RETURN(
          PgResult token,
          conn.Query("SELECT value FROM " + s + ".meta WHERE key = 'schema_token'", "read the token"));
      if (token.rows() == 0) {
        return Status::SchemaVersionMismatch(where + " has a meta table but no schema token; "
                                             "it was not written by mqlite. Nothing was changed");
      }
      if (token.text(0, 0) != kPostgresSchemaToken) {
        return Status::SchemaVersionMismatch(
            where + " has schema version '" + std::string(token.text(0, 0)) +
            "', but this build reads and writes '" + kPostgresSchemaToken +
            "'. Nothing was changed");
      }
      return Status::OK();
    }
    if (tables > 0) {
      return Status::SchemaVersionMismatch(
          where + " holds " + std::to_string(tables) +
          " table(s) but no mqlite schema token: it belongs to something else. Use another "
          "schema. Nothing was changed");
    }
    std::string script;  // one round trip
    for (const std::string& ddl : SchemaDdl(s)) script += ddl + ";\n";
    return conn.Simple(script, "build the schema");
  }();
  if (!st.ok()) {
    conn.Rollback();
    return st;
  }
  return conn.Commit();
}

}  // namespace mqlite::pg_internal
