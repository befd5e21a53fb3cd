// mqlite_quickstart: a guided tour of the mqlite API on the SQLite store.
//
//   mqlite_quickstart [--messages N] [--keep] [PATH]
//
// Creates queue "jobs" in a fresh SQLite database, sends N messages (a quarter
// one by one, the rest in batches), receives them with Peek-Lock in batches of
// 64 and completes each batch with CompleteBatch, then shows Abandon, Defer /
// ReceiveDeferred, Reject and a DLQ Redrive once each, printing Stats and the
// throughput of each phase.
//
// PATH defaults to a fresh, randomly named ./mqlite-quickstart-*.db. The
// quickstart never touches an existing file: an explicit PATH that exists is
// refused. The database is removed at exit unless --keep (or a failure, so it
// can be inspected).
//
// Only the public API is used, and every Status is checked: any failure prints
// the step and the error and exits 1.
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"

namespace {

namespace fs = std::filesystem;
using mqlite::Message;
using mqlite::MessageState;
using mqlite::Result;
using mqlite::Status;

constexpr std::string_view kQueue = "jobs";
constexpr int kSendBatch = 500;    // ≤ 1000 (EngineOptions::max_send_batch)
constexpr int kReceiveBatch = 64;  // ≤ 256 (SPEC §5)

// A failed step. Thrown inside this program only (mqlite itself never throws)
// so that the engine is closed by RAII before main reports the error.
struct StepFailed {
  std::string message;
};

[[noreturn]] void Fail(std::string_view step, std::string_view why) {
  throw StepFailed{std::string(step) + ": " + std::string(why)};
}

void Check(const Status& s, std::string_view step) {
  if (!s.ok()) Fail(step, s.ToString());
}

template <typename T>
T Take(Result<T> r, std::string_view step) {
  if (!r.has_value()) Fail(step, r.error().ToString());
  return std::move(r).value();
}

// Peek-Lock, no long-poll wait.
mqlite::ReceiveOptions PeekLock(int max_messages) {
  mqlite::ReceiveOptions o;
  o.max_messages = max_messages;
  o.mode = mqlite::ReceiveMode::kPeekLock;
  return o;
}

void Expect(bool condition, std::string_view step, std::string_view why) {
  if (!condition) Fail(step, why);
}

class Stopwatch {
 public:
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct Phase {
  const char* name;
  int64_t messages;
  double seconds;
  double Rate() const { return seconds > 0 ? static_cast<double>(messages) / seconds : 0; }
};

void Report(const Phase& p) {
  std::printf("    %" PRId64 " messages in %.3f s = %.0f msg/s\n", p.messages, p.seconds, p.Rate());
  std::fflush(stdout);
}

// Prints "  12500/20000" at every quarter of `total` (and at the end).
class Progress {
 public:
  explicit Progress(int64_t total) : total_(total) {}
  void Update(int64_t done) {
    bool crossed = false;
    while (next_quarter_ <= 4 && done * 4 >= total_ * next_quarter_) {
      crossed = true;
      ++next_quarter_;
    }
    if (crossed) {
      std::printf("    %" PRId64 "/%" PRId64 "\n", done, total_);
      std::fflush(stdout);
    }
  }

 private:
  int64_t total_;
  int next_quarter_ = 1;
};

void PrintStats(mqlite::Engine& mq, const char* when) {
  const mqlite::QueueStats s = Take(mq.Stats(kQueue), "Stats");
  std::printf("  stats %s: active=%" PRId64 " locked=%" PRId64 " deferred=%" PRId64
              " scheduled=%" PRId64 " dead_lettered=%" PRId64 " total=%" PRId64
              " body_bytes=%" PRId64 " oldest_claimable_age_ms=%" PRId64 "\n",
              when, s.active, s.locked, s.deferred, s.scheduled, s.dead_lettered, s.total,
              s.body_bytes, s.oldest_claimable_age_ms);
  std::fflush(stdout);
}

mqlite::OutgoingMessage Job(int64_t i) {
  mqlite::OutgoingMessage m;
  m.body = "{\"job\":" + std::to_string(i) + ",\"payload\":\"" + std::string(64, 'x') + "\"}";
  m.content_type = "application/json";
  m.properties["source"] = "quickstart";
  return m;
}

// Receives exactly one message and checks it is `expected_seq` (0 = any).
Message ReceiveOne(mqlite::Engine& mq, int64_t expected_seq, std::string_view step) {
  std::vector<Message> got = Take(mq.Receive(kQueue, PeekLock(1)), step);
  Expect(got.size() == 1, step, "expected 1 message, got " + std::to_string(got.size()));
  Expect(expected_seq == 0 || got[0].seq == expected_seq, step,
         "expected seq " + std::to_string(expected_seq) + ", got " + std::to_string(got[0].seq));
  Expect(got[0].state == MessageState::kLocked && !got[0].lock_token.empty(), step,
         "a Peek-Lock receive must return a locked message with a token");
  return got[0];
}

void Describe(const Message& m, const char* what) {
  std::printf("    %s: seq=%" PRId64 " delivery_count=%d state=%s body=%s\n", what, m.seq,
              m.delivery_count, std::string(mqlite::MessageStateName(m.state)).c_str(),
              m.body.c_str());
  std::fflush(stdout);
}

int64_t SendText(mqlite::Engine& mq, std::string body, std::string_view step) {
  mqlite::OutgoingMessage m;
  m.body = std::move(body);
  return Take(mq.Send(kQueue, m), step);
}

std::vector<Phase> Run(mqlite::Engine& mq, int64_t total) {
  std::vector<Phase> phases;

  mqlite::QueueConfig config;
  config.name = std::string(kQueue);
  config.lock_duration_ms = 30'000;
  config.max_delivery_count = 5;
  const mqlite::QueueConfig stored = Take(mq.CreateQueue(config), "CreateQueue");
  std::printf("  queue '%s': lock_duration=%" PRId64 " ms, max_delivery_count=%d, ordering=%s\n",
              stored.name.c_str(), stored.lock_duration_ms, stored.max_delivery_count,
              std::string(mqlite::OrderingName(stored.ordering)).c_str());

  // ---- 1. Send one by one: one commit per message. ----
  const int64_t one_by_one = total / 4 > 0 ? total / 4 : 1;
  const int64_t batched = total - one_by_one;
  std::printf("[1/5] Send, one message per call: %" PRId64 " messages\n", one_by_one);
  {
    Progress progress(one_by_one);
    Stopwatch watch;
    for (int64_t i = 0; i < one_by_one; ++i) {
      const int64_t seq = Take(mq.Send(kQueue, Job(i)), "Send");
      Expect(seq > 0, "Send", "seq must be > 0");
      progress.Update(i + 1);
    }
    phases.push_back({"send one-by-one", one_by_one, watch.Seconds()});
    Report(phases.back());
  }

  // ---- 2. SendBatch: one commit per batch. ----
  std::printf("[2/5] SendBatch, %d per batch: %" PRId64 " messages\n", kSendBatch, batched);
  {
    Progress progress(batched);
    Stopwatch watch;
    std::vector<mqlite::OutgoingMessage> batch;
    for (int64_t sent = 0; sent < batched;) {
      batch.clear();
      for (int64_t i = 0; i < kSendBatch && sent + i < batched; ++i) {
        batch.push_back(Job(one_by_one + sent + i));
      }
      const std::vector<mqlite::SendOutcome> outcomes = Take(mq.SendBatch(kQueue, batch), "SendBatch");
      Expect(outcomes.size() == batch.size(), "SendBatch", "one outcome per message expected");
      for (const mqlite::SendOutcome& o : outcomes) {
        Expect(o.status.ok() && o.seq > 0, "SendBatch", "every slot of a batch without dedup is sent");
      }
      sent += static_cast<int64_t>(batch.size());
      progress.Update(sent);
    }
    phases.push_back({"send batch", batched, watch.Seconds()});
    Report(phases.back());
  }
  PrintStats(mq, "after sending");

  // ---- 3. Receive (Peek-Lock) + CompleteBatch. ----
  std::printf("[3/5] Receive (Peek-Lock, %d per call) + CompleteBatch: %" PRId64 " messages\n",
              kReceiveBatch, total);
  {
    Progress progress(total);
    Stopwatch watch;
    int64_t done = 0;
    std::vector<mqlite::SettleItem> items;
    while (done < total) {
      const std::vector<Message> got =
          Take(mq.Receive(kQueue, PeekLock(kReceiveBatch)), "Receive");
      Expect(!got.empty(), "Receive",
             "queue ran dry after " + std::to_string(done) + " of " + std::to_string(total));
      items.clear();
      for (const Message& m : got) {
        Expect(m.delivery_count == 1, "Receive", "first delivery must have delivery_count 1");
        items.push_back({.seq = m.seq, .token = m.lock_token});
      }
      const std::vector<Status> results = Take(mq.CompleteBatch(kQueue, items), "CompleteBatch");
      Expect(results.size() == items.size(), "CompleteBatch", "one status per item expected");
      for (size_t i = 0; i < results.size(); ++i) {
        Check(results[i], "CompleteBatch item seq " + std::to_string(items[i].seq));
      }
      done += static_cast<int64_t>(got.size());
      progress.Update(done);
    }
    phases.push_back({"receive + complete", total, watch.Seconds()});
    Report(phases.back());
  }
  PrintStats(mq, "after draining");

  // ---- 4. The other settlements, once each. ----
  std::printf("[4/5] Abandon, Defer + ReceiveDeferred, Reject, DLQ Redrive\n");
  {
    // Abandon: the lease is given up; the message is claimable again at once
    // and its next delivery counts as the second.
    const int64_t seq = SendText(mq, "abandon me", "Send (abandon)");
    Message m = ReceiveOne(mq, seq, "Receive (abandon)");
    Describe(m, "received");
    Check(mq.Abandon(kQueue, m.seq, m.lock_token), "Abandon");
    m = ReceiveOne(mq, seq, "Receive after Abandon");
    Expect(m.delivery_count == 2, "Receive after Abandon", "delivery_count should be 2");
    Describe(m, "abandoned, received again");
    Check(mq.Complete(kQueue, m.seq, m.lock_token), "Complete (abandon)");
  }
  {
    // Defer: set aside; only ReceiveDeferred by seq brings it back.
    const int64_t seq = SendText(mq, "defer me", "Send (defer)");
    Message m = ReceiveOne(mq, seq, "Receive (defer)");
    Check(mq.Defer(kQueue, m.seq, m.lock_token), "Defer");
    const std::vector<Message> none = Take(mq.Receive(kQueue, PeekLock(8)), "Receive");
    Expect(none.empty(), "Receive after Defer", "a deferred message must not be claimable");
    std::printf("    deferred seq=%" PRId64 ": a plain Receive returns nothing\n", seq);
    const std::array<int64_t, 1> seqs{seq};
    std::vector<Message> back = Take(mq.ReceiveDeferred(kQueue, seqs), "ReceiveDeferred");
    Expect(back.size() == 1 && back[0].seq == seq && back[0].state == MessageState::kLocked,
           "ReceiveDeferred", "expected the deferred message, locked");
    Describe(back[0], "ReceiveDeferred");
    Check(mq.Complete(kQueue, back[0].seq, back[0].lock_token), "Complete (deferred)");
  }
  {
    // Reject: straight to the dead-letter queue with a reason; Redrive puts it
    // back as a new message (new seq, delivery_count 0).
    const int64_t seq = SendText(mq, "reject me", "Send (reject)");
    Message m = ReceiveOne(mq, seq, "Receive (reject)");
    Check(mq.Reject(kQueue, m.seq, m.lock_token, "InvalidPayload", "rejected by the quickstart"),
          "Reject");
    mqlite::PeekOptions dead_letters;
    dead_letters.state = MessageState::kDeadLettered;
    const std::vector<Message> dead =
        Take(mq.Peek(kQueue, dead_letters), "Peek dead letters");
    Expect(dead.size() == 1 && dead[0].seq == seq, "Peek dead letters",
           "expected exactly the rejected message");
    std::printf("    dead-lettered seq=%" PRId64 " reason=%s description=%s\n", dead[0].seq,
                dead[0].dead_letter_reason.value_or("?").c_str(),
                dead[0].dead_letter_description.value_or("").c_str());
    PrintStats(mq, "with one dead letter");

    const int64_t moved = Take(mq.Redrive(kQueue), "Redrive");
    Expect(moved == 1, "Redrive", "expected 1 message redriven, got " + std::to_string(moved));
    m = ReceiveOne(mq, 0, "Receive after Redrive");
    Expect(m.seq != seq && m.body == "reject me", "Receive after Redrive",
           "a redriven message comes back with a new seq and the same body");
    Expect(m.delivery_count == 1, "Receive after Redrive",
           "redrive resets delivery_count, so this delivery is the first");
    std::printf("    redriven: old seq=%" PRId64 " -> new seq=%" PRId64 ", delivery_count=%d\n", seq,
                m.seq, m.delivery_count);
    Check(mq.Complete(kQueue, m.seq, m.lock_token), "Complete (redriven)");
  }
  PrintStats(mq, "at the end");
  const mqlite::QueueStats end = Take(mq.Stats(kQueue), "Stats");
  Expect(end.total == 0, "Stats", "the queue should be empty at the end");
  return phases;
}

struct Args {
  int64_t messages = 20'000;
  bool keep = false;
  std::string path;
};

int Usage(const char* argv0, int rc) {
  std::fprintf(rc == 0 ? stdout : stderr,
               "usage: %s [--messages N] [--keep] [PATH]\n"
               "  --messages N  messages to send and receive (default 20000)\n"
               "  --keep        keep the database file at exit\n"
               "  PATH          a database file that must not exist yet\n"
               "                (default: a fresh ./mqlite-quickstart-*.db)\n",
               argv0);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") return Usage(argv[0], 0);
    if (a == "--keep") {
      args.keep = true;
    } else if (a == "--messages" && i + 1 < argc) {
      char* end = nullptr;
      args.messages = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || args.messages < 1 || args.messages > 100'000'000) {
        std::fprintf(stderr, "--messages wants a number from 1 to 100000000\n");
        return 2;
      }
    } else if (!a.empty() && a[0] != '-' && args.path.empty()) {
      args.path = std::string(a);
    } else {
      return Usage(argv[0], 2);
    }
  }

  std::error_code ec;
  if (args.path.empty()) {
    std::random_device rd;
    char name[64];
    std::snprintf(name, sizeof name, "mqlite-quickstart-%08x.db", rd());
    args.path = name;
  } else if (fs::exists(args.path, ec)) {
    std::fprintf(stderr,
                 "quickstart: %s already exists; refusing to touch it (remove it or name "
                 "another file)\n",
                 args.path.c_str());
    return 2;
  }
  const std::string path = fs::absolute(args.path, ec).string();
  std::printf("mqlite quickstart: %" PRId64 " messages, database %s\n", args.messages,
              path.c_str());

  std::vector<Phase> phases;
  try {
    std::unique_ptr<mqlite::Store> store =
        Take(mqlite::OpenSqliteStore({.path = path, .durability = mqlite::Durability::kNormal}),
             "OpenSqliteStore");
    std::unique_ptr<mqlite::Engine> engine =
        Take(mqlite::Engine::Open(std::move(store)), "Engine::Open");
    phases = Run(*engine, args.messages);
    Check(engine->Close(), "Close");
  } catch (const StepFailed& f) {
    std::fprintf(stderr, "quickstart FAILED: %s\n(database kept at %s)\n", f.message.c_str(),
                 path.c_str());
    return 1;
  }

  std::printf("[5/5] Throughput (SQLite, synchronous=NORMAL, WAL)\n");
  for (const Phase& p : phases) {
    std::printf("    %-20s %10.0f msg/s  (%" PRId64 " in %.3f s)\n", p.name, p.Rate(), p.messages,
                p.seconds);
  }

  if (args.keep) {
    std::printf("database kept at %s\n", path.c_str());
  } else {
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"}) {
      fs::remove(path + suffix, ec);
    }
  }
  std::printf("quickstart: OK\n");
  return 0;
}
