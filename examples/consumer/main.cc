// The smallest useful mqlite program, built against an *installed* mqlite.
//
// Opens a fresh SQLite database in the temp directory, sends one message,
// receives it with Peek-Lock, completes it, checks the queue is empty, and
// exits 0 only if every step did what the SPEC says. Any failure prints the
// step and the Status and exits 1.
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include "mqlite/engine.h"
#include "mqlite/sqlite.h"

namespace {

bool Fail(const char* step, const mqlite::Status& s) {
  std::fprintf(stderr, "consumer: %s: %s\n", step, s.ToString().c_str());
  return false;
}

bool Fail(const char* step, const std::string& why) {
  std::fprintf(stderr, "consumer: %s: %s\n", step, why.c_str());
  return false;
}

bool RunOnce(const std::string& path) {
  auto store = mqlite::OpenSqliteStore({.path = path});
  if (!store) return Fail("open store", store.error());
  auto engine = mqlite::Engine::Open(std::move(*store));
  if (!engine) return Fail("open engine", engine.error());
  mqlite::Engine& mq = **engine;

  auto queue = mq.CreateQueue({.name = "orders"});
  if (!queue) return Fail("create queue", queue.error());

  mqlite::OutgoingMessage order;
  order.body = "order #1";
  order.message_id = "order-1";
  auto seq = mq.Send("orders", order);
  if (!seq) return Fail("send", seq.error());

  mqlite::ReceiveOptions receive;
  receive.max_messages = 8;  // Peek-Lock is the default mode
  auto got = mq.Receive("orders", receive);
  if (!got) return Fail("receive", got.error());
  if (got->size() != 1) return Fail("receive", "expected 1 message, got " + std::to_string(got->size()));
  const mqlite::Message& m = got->front();
  if (m.seq != *seq || m.body != "order #1" || m.message_id != "order-1" ||
      m.delivery_count != 1 || m.state != mqlite::MessageState::kLocked || m.lock_token.empty()) {
    return Fail("receive", "message came back different from what was sent");
  }

  if (auto s = mq.Complete("orders", m.seq, m.lock_token); !s.ok()) return Fail("complete", s);

  auto stats = mq.Stats("orders");
  if (!stats) return Fail("stats", stats.error());
  if (stats->total != 0) return Fail("stats", "queue not empty after Complete");

  if (auto s = mq.Close(); !s.ok()) return Fail("close", s);
  return true;
}

}  // namespace

int main() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec);
  if (ec) dir = ".";
  std::random_device rd;
  const fs::path path = dir / ("mqlite-consumer-" + std::to_string(rd()) + ".db");

  const bool ok = RunOnce(path.string());

  // The engine is closed (or was never opened): remove the database, its WAL
  // files and the lock sidecar.
  for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"}) {
    fs::remove(path.string() + suffix, ec);
  }
  if (!ok) return 1;
  std::puts("consumer: sent, received and completed 1 message: OK");
  return 0;
}
