// mqlite — the operator's command line: queues, stats, peek, send, receive,
// dead letters and maintenance on any store by URL (docs/cli.md).
//
// Exit codes: 0 ok; 1 the operation failed (the Status code and message on
// stderr); 2 usage (bad command line or store URL; the usage on stderr).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <stop_token>
#include <thread>

#include "args.h"
#include "json.h"
#include "mqlite/engine.h"
#include "mqlite/open.h"

namespace mqlite::cli {
namespace {

constexpr const char* kOverview = R"(usage: mqlite --store URL [--json] [--timeout DURATION] COMMAND ...

Commands:
  queue list                          every queue and its configuration
  queue get NAME                      one queue's configuration
  queue create NAME [CONFIG]          create if absent (an existing queue is left as it is)
  queue update NAME [CONFIG]          change the given settings, keep the rest
  queue delete NAME --yes             delete the queue and every message in it
  stats [QUEUE] [--watch [--interval D] [--count N]]
  peek QUEUE [--state S] [--from SEQ] [--limit N]
  send QUEUE [--body B | --file F | stdin] [--property K=V]... [--group G]
             [--delay D] [--priority P] [--ttl D] [--message-id ID] [--subject S]
             [--correlation-id ID] [--content-type T]
  receive QUEUE [--complete | --abandon | --delete] [--max N] [--wait D]
  dlq list QUEUE [--from SEQ] [--limit N]
  dlq redrive QUEUE [--to QUEUE] [--max N] [--older-than D] [--batch N]
  dlq purge QUEUE [--max N] [--older-than D] [--batch N]
  dead-letter QUEUE SEQ --reason R [--description D]
  maintenance                         run maintenance passes until nothing is left to do
  stores                              the store URLs this build opens

CONFIG: --lock-duration D --max-delivery N --default-ttl D --dedup-window D
        --ordering standard|group_fifo|strict_fifo --dead-letter-on-expire true|false
        --max-message-bytes N --dlq-max-age D --dlq-max-count N --dlq-max-bytes N
Durations (D): milliseconds, or 500ms, 30s, 5m, 2h, 7d.
--store may also come from the MQLITE_STORE environment variable.
queue list/get, stats, peek and dlq list open an sqlite: or lmdb: store read-only,
without its lock, so they work beside the application running it; the other
commands take the lock (stop the application first).
--json: one JSON document per line (docs/cli.md lists the fields).
Exit codes: 0 ok, 1 the operation failed, 2 usage.
)";

// ---- Output helpers -------------------------------------------------------

std::string Iso(int64_t ms) {
  if (ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms % 1000);
}

std::string Human(int64_t ms) {
  if (ms <= 0) return ms == 0 ? "-" : "unbounded";
  if (ms % 86'400'000 == 0) return fmt::format("{}d", ms / 86'400'000);
  if (ms % 3'600'000 == 0) return fmt::format("{}h", ms / 3'600'000);
  if (ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

// A body or field for a table cell: printable ASCII kept, the rest escaped,
// cut at `width` with "~".
std::string Cell(std::string_view s, size_t width) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    if (out.size() > width) break;
  }
  if (out.size() > width) out = out.substr(0, width - 1) + "~";
  return out;
}

// Columns padded to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print() const {
    std::vector<size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += i + 1 == r.size() ? r[i] : fmt::format("{:<{}}  ", r[i], w[i]);
      }
      fmt::print("{}\n", line);
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string ConfigJson(const QueueConfig& c) {
  return JsonObject()
      .Str("name", c.name)
      .Int("lock_duration_ms", c.lock_duration_ms)
      .Int("max_delivery_count", c.max_delivery_count)
      .Int("default_ttl_ms", c.default_ttl_ms)
      .Bool("dead_letter_on_expire", c.dead_letter_on_expire)
      .Int("dedup_window_ms", c.dedup_window_ms)
      .Str("ordering", OrderingName(c.ordering))
      .Int("dlq_max_age_ms", c.dlq_max_age_ms)
      .Int("dlq_max_count", c.dlq_max_count)
      .Int("dlq_max_bytes", c.dlq_max_bytes)
      .Int("max_message_bytes", c.max_message_bytes)
      .Done();
}

// Peek output never holds a lock token (SPEC §6); Receive's does, for the
// receiver that owns the lease.
JsonObject MessageJson(const Message& m, bool with_token) {
  JsonObject o;
  o.Int("seq", m.seq)
      .Str("queue", m.queue)
      .Str("state", MessageStateName(m.state))
      .Bytes("body", m.body)
      .Bytes("message_id", m.message_id)
      .Bytes("group_id", m.group_id)
      .Bytes("subject", m.subject)
      .Bytes("correlation_id", m.correlation_id)
      .Bytes("content_type", m.content_type)
      .Map("properties", m.properties)
      .Int("priority", m.priority)
      .Int("enqueued_at", m.enqueued_at)
      .Int("visible_at", m.visible_at)
      .Int("expires_at", m.expires_at)
      .Int("delivery_count", m.delivery_count)
      .Int("locked_until", m.locked_until);
  if (with_token) {
    if (m.lock_token.empty()) {
      o.Null("lock_token");
    } else {
      o.Str("lock_token", m.lock_token.ToHex());
    }
  }
  o.Bytes("dead_letter_reason", m.dead_letter_reason)
      .Bytes("dead_letter_description", m.dead_letter_description)
      .Int("dead_lettered_at", m.dead_lettered_at);
  return o;
}

JsonObject StatsJson(const std::string& queue, const QueueStats& s) {
  return JsonObject()
      .Str("queue", queue)
      .Int("active", s.active)
      .Int("locked", s.locked)
      .Int("deferred", s.deferred)
      .Int("scheduled", s.scheduled)
      .Int("dead_lettered", s.dead_lettered)
      .Int("total", s.total)
      .Int("body_bytes", s.body_bytes)
      .Int("oldest_claimable_age_ms", s.oldest_claimable_age_ms);
}

// ---- The failure path -----------------------------------------------------

// An operation that failed: exit code 1.
struct Failure {
  Status status;
};

// ---- The command runner ---------------------------------------------------

class Cli {
 public:
  Cli(const Args& args, std::stop_token stop) : args_(args), stop_(stop) {
    json_ = args.Has("json");
  }

  int Run();

 private:
  const std::vector<std::string>& pos() const { return args_.positionals(); }
  const std::string& Pos(size_t i, const std::string& command, const char* what) const {
    if (pos().size() <= i) throw UsageError{fmt::format("'{}' needs {}", command, what), command};
    return pos()[i];
  }
  void NoMorePositionals(size_t n, const std::string& command) const {
    if (pos().size() > n) {
      throw UsageError{fmt::format("'{}': unexpected '{}'", command, pos()[n]), command};
    }
  }
  CallOptions Call() const {
    CallOptions c = timeout_ms_ ? CallOptions::Timeout(*timeout_ms_) : CallOptions{};
    c.stop_token = stop_;
    return c;
  }
  template <typename T>
  T Must(Result<T> r) {
    if (!r.ok()) throw Failure{r.status()};
    return std::move(*r);
  }
  void Must(const Status& s) {
    if (!s.ok()) throw Failure{s};
  }
  void Line(const std::string& s) { fmt::print("{}\n", s); }

  Engine& engine();

  int Queue();
  int Stats();
  int Peek(const std::string& command, std::optional<MessageState> forced_state);
  int Send();
  int Receive();
  int Dlq();
  int Drain(const std::string& command, bool redrive);
  int DeadLetter();
  int Maintenance();
  int Stores();
  QueueConfig ConfigFromFlags(QueueConfig base) const;

  const Args& args_;
  std::stop_token stop_;
  bool json_ = false;
  bool inspect_ = false;  // the command only reads (Run)
  std::optional<int64_t> timeout_ms_;
  std::unique_ptr<Engine> engine_;
};

Engine& Cli::engine() {
  if (engine_) return *engine_;
  std::optional<std::string> url = args_.Get("store");
  if (!url) {
    if (const char* env = std::getenv("MQLITE_STORE"); env && *env) url = env;
  }
  if (!url) {
    throw UsageError{"no store: give --store URL (or set MQLITE_STORE); this build opens:\n" +
                         StoreUrlHelp(),
                     ""};
  }
  Result<StoreUrl> parsed = ParseStoreUrl(*url);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kUnimplemented) throw Failure{parsed.status()};
    throw UsageError{std::string(parsed.status().message()), ""};
  }
  // Inspection never takes an embedded store's exclusive lock, so it works
  // beside the application that owns the store (docs/cli.md, "Inspecting a
  // running application"); read_only=false in the URL asks for the lock.
  const bool embedded = parsed->scheme == "sqlite" || parsed->scheme == "lmdb";
  if (inspect_ && embedded && parsed->params.count("read_only") == 0) {
    parsed->params["read_only"] = "true";
  }
  Result<std::unique_ptr<Store>> store = OpenStoreUrl(*parsed);
  if (!store.ok()) {
    if (store.status().code() == StatusCode::kDbLocked && !inspect_) {
      throw Failure{store.status().WithContext(
          "the store is open in another process (an embedded store admits one writing process "
          "at a time; stop it to change its queues — queue list/get, stats, peek and dlq list "
          "inspect it as it runs)")};
    }
    throw Failure{store.status()};
  }
  EngineOptions eo;
  // An operator's command does only what it says: no background passes.
  eo.background_maintenance = false;
  engine_ = Must(Engine::Open(std::move(*store), eo));
  return *engine_;
}

QueueConfig Cli::ConfigFromFlags(QueueConfig c) const {
  if (auto v = args_.Millis("lock-duration")) c.lock_duration_ms = *v;
  if (auto v = args_.Int("max-delivery", 1, 1'000'000)) c.max_delivery_count = static_cast<int32_t>(*v);
  if (auto v = args_.Millis("default-ttl")) c.default_ttl_ms = *v;
  if (auto v = args_.Millis("dedup-window")) c.dedup_window_ms = *v;
  if (auto v = args_.Get("ordering")) {
    Result<Ordering> o = ParseOrdering(*v);
    if (!o.ok()) {
      throw UsageError{fmt::format("--ordering {}: one of standard, group_fifo, strict_fifo", *v),
                       "queue"};
    }
    c.ordering = *o;
  }
  if (auto v = args_.Get("dead-letter-on-expire")) {
    if (*v != "true" && *v != "false") {
      throw UsageError{"--dead-letter-on-expire: true or false", "queue"};
    }
    c.dead_letter_on_expire = *v == "true";
  }
  const int64_t big = int64_t{1} << 62;
  if (auto v = args_.Int("max-message-bytes", 0, big)) c.max_message_bytes = *v;
  if (auto v = args_.Get("dlq-max-age")) {
    // -1 = unbounded, as in QueueConfig.
    if (*v == "-1") {
      c.dlq_max_age_ms = -1;
    } else {
      c.dlq_max_age_ms = *args_.Millis("dlq-max-age");
    }
  }
  if (auto v = args_.Int("dlq-max-count", -1, big)) c.dlq_max_count = *v;
  if (auto v = args_.Int("dlq-max-bytes", -1, big)) c.dlq_max_bytes = *v;
  return c;
}

int Cli::Queue() {
  const std::string sub = Pos(1, "queue", "a subcommand: list, get, create, update or delete");
  const std::set<std::string> config_flags = {
      "lock-duration",   "max-delivery",      "default-ttl", "dedup-window",
      "ordering",        "dead-letter-on-expire", "max-message-bytes", "dlq-max-age",
      "dlq-max-count",   "dlq-max-bytes"};
  if (sub == "list") {
    args_.Allow("queue list", {});
    NoMorePositionals(2, "queue list");
    std::vector<QueueConfig> qs = Must(engine().ListQueues(Call()));
    if (json_) {
      for (const QueueConfig& q : qs) Line(ConfigJson(q));
      return 0;
    }
    Table t({"NAME", "ORDERING", "LOCK", "MAX_DELIVERY", "TTL", "DEDUP", "DLQ_ON_EXPIRE"});
    for (const QueueConfig& q : qs) {
      t.Add({q.name, std::string(OrderingName(q.ordering)), Human(q.lock_duration_ms),
             std::to_string(q.max_delivery_count), Human(q.default_ttl_ms),
             Human(q.dedup_window_ms), q.dead_letter_on_expire ? "yes" : "no"});
    }
    t.Print();
    if (qs.empty()) fmt::print(stderr, "no queues\n");
    return 0;
  }
  const std::string name = Pos(2, "queue " + sub, "a queue name");
  NoMorePositionals(3, "queue " + sub);
  QueueConfig stored;
  if (sub == "get") {
    args_.Allow("queue get", {});
    stored = Must(engine().GetQueue(name, Call()));
  } else if (sub == "create") {
    args_.Allow("queue create", config_flags);
    QueueConfig wanted = ConfigFromFlags(QueueConfig{.name = name});
    // CreateQueue leaves an existing queue as it is; say so.
    Result<QueueConfig> existing = engine().GetQueue(name, Call());
    if (!existing.ok() && existing.status().code() != StatusCode::kQueueNotFound) {
      throw Failure{existing.status()};
    }
    stored = Must(engine().CreateQueue(wanted, Call()));
    if (existing.ok() && !json_) {
      fmt::print(stderr, "queue '{}' exists; its configuration was not changed{}\n", name,
                 stored == wanted ? "" : " (use 'queue update' to change it)");
    }
  } else if (sub == "update") {
    args_.Allow("queue update", config_flags);
    QueueConfig current = Must(engine().GetQueue(name, Call()));
    stored = Must(engine().UpdateQueue(ConfigFromFlags(current), Call()));
  } else if (sub == "delete") {
    args_.Allow("queue delete", {"yes"});
    if (!args_.Has("yes")) {
      throw UsageError{fmt::format("'queue delete {}' deletes the queue and every message in it; "
                                   "add --yes to do it",
                                   name),
                       "queue"};
    }
    Must(engine().DeleteQueue(name, Call()));
    if (json_) {
      Line(JsonObject().Str("deleted", name).Done());
    } else {
      fmt::print("deleted queue {}\n", name);
    }
    return 0;
  } else {
    throw UsageError{fmt::format("unknown subcommand 'queue {}'", sub), "queue"};
  }
  if (json_) {
    Line(ConfigJson(stored));
    return 0;
  }
  Table t({"FIELD", "VALUE"});
  t.Add({"name", stored.name});
  t.Add({"ordering", std::string(OrderingName(stored.ordering))});
  t.Add({"lock_duration", Human(stored.lock_duration_ms)});
  t.Add({"max_delivery_count", std::to_string(stored.max_delivery_count)});
  t.Add({"default_ttl", Human(stored.default_ttl_ms)});
  t.Add({"dead_letter_on_expire", stored.dead_letter_on_expire ? "true" : "false"});
  t.Add({"dedup_window", Human(stored.dedup_window_ms)});
  t.Add({"dlq_max_age", stored.dlq_max_age_ms == 0 ? "engine default" : Human(stored.dlq_max_age_ms)});
  t.Add({"dlq_max_count", stored.dlq_max_count == 0 ? "engine default"
                                                    : std::to_string(stored.dlq_max_count)});
  t.Add({"dlq_max_bytes", stored.dlq_max_bytes == 0 ? "engine default"
                                                    : std::to_string(stored.dlq_max_bytes)});
  t.Add({"max_message_bytes", stored.max_message_bytes == 0
                                  ? "engine default"
                                  : std::to_string(stored.max_message_bytes)});
  t.Print();
  return 0;
}

int Cli::Stats() {
  args_.Allow("stats", {"watch", "interval", "count"});
  NoMorePositionals(2, "stats");
  const std::optional<std::string> only = pos().size() > 1 ? std::optional(pos()[1]) : std::nullopt;
  const bool watch = args_.Has("watch");
  if (!watch && (args_.Has("interval") || args_.Has("count"))) {
    throw UsageError{"--interval and --count go with --watch", "stats"};
  }
  const int64_t interval = args_.Millis("interval").value_or(2000);
  if (interval < 1) throw UsageError{"--interval must be at least 1ms", "stats"};
  const std::optional<int64_t> count = args_.Int("count", 1, int64_t{1} << 40);
  const bool tty = isatty(STDOUT_FILENO) != 0;
  for (int64_t round = 1;; ++round) {
    std::vector<std::string> names;
    if (only) {
      names.push_back(*only);
    } else {
      for (const QueueConfig& q : Must(engine().ListQueues(Call()))) names.push_back(q.name);
    }
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    Table t({"QUEUE", "ACTIVE", "LOCKED", "DEFERRED", "SCHEDULED", "DEAD", "TOTAL", "BYTES",
             "OLDEST"});
    for (const std::string& n : names) {
      const QueueStats s = Must(engine().Stats(n, Call()));
      if (json_) {
        JsonObject line = StatsJson(n, s);
        if (watch) line.Int("at", now_ms);
        Line(line.Done());
      } else {
        t.Add({n, std::to_string(s.active), std::to_string(s.locked), std::to_string(s.deferred),
               std::to_string(s.scheduled), std::to_string(s.dead_lettered),
               std::to_string(s.total), std::to_string(s.body_bytes),
               s.oldest_claimable_age_ms > 0 ? Human(s.oldest_claimable_age_ms) : "-"});
      }
    }
    if (!json_) {
      if (watch && tty) fmt::print("\x1b[H\x1b[2J");
      if (watch) fmt::print("{}  (every {}; Ctrl-C to stop)\n", Iso(now_ms), Human(interval));
      t.Print();
      if (names.empty()) fmt::print(stderr, "no queues\n");
    }
    std::fflush(stdout);
    if (!watch || (count && round >= *count)) return 0;
    // Sleep in small steps so Ctrl-C ends the watch at once.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(interval);
    while (std::chrono::steady_clock::now() < until) {
      if (stop_.stop_requested()) return 0;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
    }
    if (stop_.stop_requested()) return 0;
    if (!json_ && !tty) fmt::print("\n");
  }
}

int Cli::Peek(const std::string& command, std::optional<MessageState> forced_state) {
  std::set<std::string> allowed = {"from", "limit"};
  if (!forced_state) allowed.insert("state");
  args_.Allow(command, allowed);
  const std::string queue = Pos(forced_state ? 2 : 1, command, "a queue name");
  NoMorePositionals(forced_state ? 3 : 2, command);
  PeekOptions po;
  po.state = forced_state;
  if (auto s = args_.Get("state")) {
    Result<MessageState> st = ParseMessageState(*s);
    if (!st.ok()) {
      throw UsageError{fmt::format("--state {}: one of active, locked, deferred, scheduled, "
                                   "dead_lettered",
                                   *s),
                       command};
    }
    po.state = *st;
  }
  po.from_seq = args_.Int("from", 0, INT64_MAX).value_or(0);
  int64_t limit = args_.Int("limit", 1, 1'000'000).value_or(100);
  std::vector<Message> all;
  // Pages of at most 1000 (Peek's limit), in seq order.
  while (limit > 0) {
    po.max_messages = static_cast<int>(std::min<int64_t>(limit, 1000));
    std::vector<Message> page = Must(engine().Peek(queue, po, Call()));
    if (page.empty()) break;
    po.from_seq = page.back().seq;
    limit -= static_cast<int64_t>(page.size());
    const bool last = page.size() < static_cast<size_t>(po.max_messages);
    for (Message& m : page) all.push_back(std::move(m));
    if (last) break;
  }
  if (json_) {
    for (const Message& m : all) Line(MessageJson(m, /*with_token=*/false).Done());
    return 0;
  }
  if (forced_state == MessageState::kDeadLettered) {
    Table t({"SEQ", "REASON", "DEAD_LETTERED", "DELIVERIES", "GROUP", "BODY"});
    for (const Message& m : all) {
      t.Add({std::to_string(m.seq), Cell(m.dead_letter_reason.value_or("-"), 40),
             Iso(m.dead_lettered_at), std::to_string(m.delivery_count),
             Cell(m.group_id.value_or("-"), 24), Cell(m.body, 48)});
    }
    t.Print();
  } else {
    Table t({"SEQ", "STATE", "PRI", "DELIVERIES", "GROUP", "ENQUEUED", "VISIBLE", "LOCKED_UNTIL",
             "BODY"});
    for (const Message& m : all) {
      t.Add({std::to_string(m.seq), std::string(MessageStateName(m.state)),
             std::to_string(m.priority), std::to_string(m.delivery_count),
             Cell(m.group_id.value_or("-"), 24), Iso(m.enqueued_at),
             m.visible_at > m.enqueued_at ? Iso(m.visible_at) : "-", Iso(m.locked_until),
             Cell(m.body, 48)});
    }
    t.Print();
  }
  if (all.empty()) fmt::print(stderr, "no messages\n");
  return 0;
}

int Cli::Send() {
  args_.Allow("send", {"body", "file", "property", "group", "delay", "priority", "ttl",
                       "message-id", "subject", "correlation-id", "content-type"});
  const std::string queue = Pos(1, "send", "a queue name");
  NoMorePositionals(2, "send");
  if (args_.Has("body") && args_.Has("file")) {
    throw UsageError{"--body and --file: give one (or neither, to read stdin)", "send"};
  }
  OutgoingMessage m;
  if (auto b = args_.Get("body")) {
    m.body = *b;
  } else if (auto f = args_.Get("file")) {
    std::ifstream in(*f, std::ios::binary);
    if (!in) throw Failure{Status::InvalidArgument(fmt::format("--file {}: cannot read it", *f))};
    m.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    if (isatty(STDIN_FILENO)) fmt::print(stderr, "reading the body from stdin (end with Ctrl-D)\n");
    m.body.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  for (const std::string& p : args_.All("property")) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError{fmt::format("--property {}: write KEY=VALUE", p), "send"};
    }
    m.properties[p.substr(0, eq)] = p.substr(eq + 1);
  }
  m.group_id = args_.Get("group");
  m.message_id = args_.Get("message-id");
  m.subject = args_.Get("subject");
  m.correlation_id = args_.Get("correlation-id");
  m.content_type = args_.Get("content-type");
  m.priority = static_cast<int>(args_.Int("priority", 0, 9).value_or(0));
  m.delay_ms = args_.Millis("delay").value_or(0);
  m.ttl_ms = args_.Millis("ttl").value_or(0);
  const std::vector<SendOutcome> out =
      Must(engine().SendBatch(queue, std::span<const OutgoingMessage>(&m, 1), Call()));
  Must(out[0].status);
  if (json_) {
    Line(JsonObject()
             .Str("queue", queue)
             .Int("seq", out[0].seq)
             .Bool("duplicate", out[0].duplicate)
             .Done());
  } else {
    fmt::print("{} seq {}{}\n", out[0].duplicate ? "duplicate of" : "sent", out[0].seq,
               out[0].duplicate ? " (same message id and body within the dedup window; nothing "
                                  "written)"
                                : "");
  }
  return 0;
}

int Cli::Receive() {
  args_.Allow("receive", {"complete", "abandon", "delete", "max", "wait"});
  const std::string queue = Pos(1, "receive", "a queue name");
  NoMorePositionals(2, "receive");
  const int settles = int(args_.Has("complete")) + int(args_.Has("abandon")) +
                      int(args_.Has("delete"));
  if (settles > 1) throw UsageError{"--complete, --abandon and --delete: give one", "receive"};
  ReceiveOptions ro;
  ro.max_messages = static_cast<int>(args_.Int("max", 1, 256).value_or(1));
  ro.wait_ms = args_.Millis("wait").value_or(0);
  if (ro.wait_ms > 20'000) throw UsageError{"--wait: at most 20s", "receive"};
  if (args_.Has("delete")) ro.mode = ReceiveMode::kReceiveAndDelete;
  std::vector<Message> got = Must(engine().Receive(queue, ro, Call()));
  std::vector<Status> outcome(got.size());
  std::string action = args_.Has("delete") ? "deleted" : "locked";
  if (args_.Has("complete") && !got.empty()) {
    std::vector<SettleItem> items;
    for (const Message& m : got) items.push_back({m.seq, m.lock_token});
    outcome = Must(engine().CompleteBatch(queue, items, Call()));
    action = "completed";
  } else if (args_.Has("abandon")) {
    for (size_t i = 0; i < got.size(); ++i) {
      outcome[i] = engine().Abandon(queue, got[i].seq, got[i].lock_token, 0, Call());
    }
    action = "abandoned";
  }
  const bool left_locked = action == "locked";
  Status first_error;
  for (size_t i = 0; i < got.size(); ++i) {
    const Message& m = got[i];
    const std::string did = outcome[i].ok() ? action : "settle failed";
    if (!outcome[i].ok() && first_error.ok()) first_error = outcome[i];
    if (json_) {
      Line(MessageJson(m, left_locked).Str("action", did).Done());
    } else {
      fmt::print("seq {}  deliveries {}  {}{}\n", m.seq, m.delivery_count, did,
                 left_locked ? fmt::format(" until {}  token {}", Iso(m.locked_until),
                                           m.lock_token.ToHex())
                             : "");
      fmt::print("{}\n", m.body);
    }
  }
  if (got.empty() && !json_) fmt::print(stderr, "no message\n");
  if (left_locked && !got.empty() && !json_) {
    fmt::print(stderr,
               "left locked: the lease runs out at its lock duration (the next command that "
               "writes to an embedded store reclaims it at once); use --complete, --abandon or "
               "--delete to settle\n");
  }
  if (!first_error.ok()) throw Failure{first_error};
  return 0;
}

int Cli::Drain(const std::string& command, bool redrive) {
  std::set<std::string> allowed = {"max", "older-than", "batch"};
  if (redrive) allowed.insert("to");
  args_.Allow(command, allowed);
  const std::string queue = Pos(2, command, "a queue name");
  NoMorePositionals(3, command);
  const int64_t max = args_.Int("max", 1, INT64_MAX).value_or(0);
  const int64_t older = args_.Millis("older-than").value_or(0);
  const int64_t batch = args_.Int("batch", 1, 1'000'000).value_or(10'000);
  const std::string target = args_.Get("to").value_or("");
  // The total is known before the first chunk, for the progress line.
  const int64_t dead = Must(engine().Stats(queue, Call())).dead_lettered;
  const int64_t goal = max > 0 ? std::min(max, dead) : dead;
  const bool tty = isatty(STDERR_FILENO) != 0;
  const char* verb = redrive ? "redriven" : "purged";
  int64_t done = 0;
  // In chunks of `batch`, each its own commit, so a million dead letters
  // neither build one huge transaction nor leave the operator in the dark.
  for (;;) {
    if (stop_.stop_requested()) {
      throw Failure{Status::Cancelled(
          fmt::format("interrupted after {} dead letters {} (each chunk committed)", done, verb))};
    }
    const int64_t want = max > 0 ? std::min(batch, max - done) : batch;
    if (want <= 0) break;
    int64_t n = 0;
    if (redrive) {
      n = Must(engine().Redrive(
          queue, {.target_queue = target, .max_messages = want, .older_than_ms = older}, Call()));
    } else {
      n = Must(engine().Purge(queue, {.max_messages = want, .older_than_ms = older}, Call()));
    }
    done += n;
    if (n < want) break;
    if (goal > batch || tty) {
      const int64_t shown = std::max(goal, done);
      fmt::print(stderr, "{} {} {}/{} ({}%)\n", command, queue, done, shown,
                 shown > 0 ? done * 100 / shown : 100);
    }
  }
  if (json_) {
    JsonObject o;
    o.Str("queue", queue).Int(redrive ? "redriven" : "purged", done);
    if (redrive) o.Str("to", target.empty() ? queue : target);
    Line(o.Done());
  } else if (redrive) {
    fmt::print("redriven {} dead letters from {} to {}\n", done, queue,
               target.empty() ? queue : target);
  } else {
    fmt::print("purged {} dead letters from {}\n", done, queue);
  }
  return 0;
}

int Cli::Dlq() {
  const std::string sub = Pos(1, "dlq", "a subcommand: list, redrive or purge");
  if (sub == "list") return Peek("dlq list", MessageState::kDeadLettered);
  if (sub == "redrive") return Drain("dlq redrive", true);
  if (sub == "purge") return Drain("dlq purge", false);
  throw UsageError{fmt::format("unknown subcommand 'dlq {}'", sub), "dlq"};
}

int Cli::DeadLetter() {
  args_.Allow("dead-letter", {"reason", "description"});
  const std::string queue = Pos(1, "dead-letter", "a queue name and a seq");
  const std::string seq_text = Pos(2, "dead-letter", "a seq");
  NoMorePositionals(3, "dead-letter");
  int64_t seq = 0;
  try {
    size_t used = 0;
    seq = std::stoll(seq_text, &used);
    if (used != seq_text.size() || seq <= 0) throw 0;
  } catch (...) {
    throw UsageError{fmt::format("dead-letter: '{}' is not a seq", seq_text), "dead-letter"};
  }
  const std::optional<std::string> reason = args_.Get("reason");
  if (!reason) throw UsageError{"dead-letter needs --reason R", "dead-letter"};
  Must(engine().DeadLetterMessage(queue, seq, *reason, args_.Get("description").value_or(""),
                                  Call()));
  if (json_) {
    Line(JsonObject().Str("queue", queue).Int("seq", seq).Str("reason", *reason).Done());
  } else {
    fmt::print("dead-lettered seq {} of {}: {}\n", seq, queue, *reason);
  }
  return 0;
}

int Cli::Maintenance() {
  args_.Allow("maintenance", {});
  NoMorePositionals(1, "maintenance");
  MaintenanceReport total;
  int passes = 0;
  for (;;) {
    const MaintenanceReport r = Must(engine().RunMaintenance(Call()));
    ++passes;
    total.promoted += r.promoted;
    total.reclaimed += r.reclaimed;
    total.expired += r.expired;
    total.retention_dropped += r.retention_dropped;
    total.records_dropped += r.records_dropped;
    total.space_reclaimed += r.space_reclaimed;
    total.queues_skipped += r.queues_skipped;
    if (!r.more || stop_.stop_requested()) break;
    if (passes % 10 == 0) fmt::print(stderr, "maintenance: {} passes so far\n", passes);
  }
  if (json_) {
    Line(JsonObject()
             .Int("passes", passes)
             .Int("promoted", total.promoted)
             .Int("reclaimed", total.reclaimed)
             .Int("expired", total.expired)
             .Int("retention_dropped", total.retention_dropped)
             .Int("records_dropped", total.records_dropped)
             .Int("space_reclaimed", total.space_reclaimed)
             .Int("queues_skipped", total.queues_skipped)
             .Done());
  } else {
    fmt::print(
        "{} pass{}: {} promoted, {} reclaimed, {} expired, {} dropped by retention, {} records "
        "dropped, {} units of space reclaimed, {} queues skipped\n",
        passes, passes == 1 ? "" : "es", total.promoted, total.reclaimed, total.expired,
        total.retention_dropped, total.records_dropped, total.space_reclaimed,
        total.queues_skipped);
  }
  return 0;
}

int Cli::Stores() {
  args_.Allow("stores", {});
  if (json_) {
    for (const std::string& s : BuiltStoreSchemes()) Line(JsonObject().Str("scheme", s).Done());
  } else {
    fmt::print("{}", StoreUrlHelp());
  }
  return 0;
}

int Cli::Run() {
  timeout_ms_ = args_.Millis("timeout");
  const std::string command = pos().empty() ? "" : pos()[0];
  if (command.empty()) throw UsageError{"no command", ""};
  const std::string sub = pos().size() > 1 ? pos()[1] : "";
  inspect_ = command == "stats" || command == "peek" ||
             (command == "queue" && (sub == "list" || sub == "get")) ||
             (command == "dlq" && sub == "list");
  if (command == "queue") return Queue();
  if (command == "stats") return Stats();
  if (command == "peek") return Peek("peek", std::nullopt);
  if (command == "send") return Send();
  if (command == "receive") return Receive();
  if (command == "dlq") return Dlq();
  if (command == "dead-letter") return DeadLetter();
  if (command == "maintenance") return Maintenance();
  if (command == "stores") return Stores();
  throw UsageError{fmt::format("unknown command '{}'", command), ""};
}

void PrintError(bool json, const Status& s) {
  if (json) {
    fmt::print(stderr, "{}\n",
               JsonObject()
                   .Raw("error", JsonObject()
                                     .Str("code", StatusCodeName(s.code()))
                                     .Str("message", s.message())
                                     .Done())
                   .Done());
  } else {
    fmt::print(stderr, "mqlite: {}\n", s.ToString());
  }
}

}  // namespace
}  // namespace mqlite::cli

int main(int argc, char** argv) {
  using namespace mqlite::cli;
  // Results and notes interleave as they happen when both go to one place
  // (2>&1, a terminal); a peek of many rows is a few lines per write anyway.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Ctrl-C and SIGTERM stop the call in flight (a long-poll, a watch, a
  // chunked redrive) through its stop token instead of killing the process
  // mid-commit: the signals are taken by one thread with sigwait.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // Never freed, and held by a global (so leak checkers see it reachable
  // after the signal thread has ended): that thread may outlive main's locals.
  static std::stop_source* const stop = new std::stop_source;
  std::thread([set]() mutable {
    int sig = 0;
    sigwait(&set, &sig);
    stop->request_stop();
    // A second signal ends the process the usual way.
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  }).detach();

  bool json = false;
  try {
    Args args = Args::Parse(argc, argv);
    json = args.Has("json");
    if (args.Has("version")) {
      fmt::print("mqlite {}\n", MQLITE_VERSION);
      return 0;
    }
    if (args.Has("help") || (!args.positionals().empty() && args.positionals()[0] == "help")) {
      fmt::print("{}\nStore URLs this build opens:\n{}", kOverview, mqlite::StoreUrlHelp());
      return 0;
    }
    Cli cli(args, stop->get_token());
    const int rc = cli.Run();
    std::fflush(stdout);
    return rc;
  } catch (const UsageError& e) {
    fmt::print(stderr, "mqlite: {}\nRun 'mqlite --help' for usage.\n", e.message);
    return 2;
  } catch (const Failure& f) {
    PrintError(json, f.status);
    return 1;
  }
}
