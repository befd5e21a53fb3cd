// mqlite_processor: an order worker on any store, with mqlite::Processor and
// typed messages (docs/processor.md).
//
//   mqlite_processor [STORE_URL] [--orders N]
//
// STORE_URL defaults to sqlite:processor_example.db (removed afterwards).
// It sends N orders as JSON (plus one body that is not JSON and one order
// with a bad quantity), then runs a processor with 4 workers whose handler
// turns each order into a shipment *inside the same transaction* as the
// order's completion (SPEC §8): a flaky dependency fails every 10th order on
// its first delivery, and the retry policy brings it back after a backoff.
// It prints progress while it drains, the processor's counters at the end,
// and exits 0 only if every valid order shipped exactly once and the two bad
// messages are in the DLQ with their reasons.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "mqlite/engine.h"
#include "mqlite/json_codec.h"
#include "mqlite/open.h"
#include "mqlite/processor.h"
#include "mqlite/typed_queue.h"

namespace {

struct Order {
  std::string id;
  int qty = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, qty)

struct Shipment {
  std::string order_id;
  int parcels = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Shipment, order_id, parcels)

int Fail(const std::string& what, const mqlite::Status& s) {
  std::fprintf(stderr, "mqlite_processor: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "sqlite:processor_example.db";
  bool remove_after = true;
  int n = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--orders" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
    } else if (a.rfind("--", 0) != 0) {
      url = a;
      remove_after = false;
    } else {
      std::fprintf(stderr, "usage: mqlite_processor [STORE_URL] [--orders N]\n");
      return 2;
    }
  }
  if (remove_after) {
    for (const char* f : {"processor_example.db", "processor_example.db-wal",
                          "processor_example.db-shm"}) {
      std::filesystem::remove(f);
    }
  }

  auto store = mqlite::OpenStoreUrl(url);
  if (!store) return Fail("open " + url, store.status());
  auto engine = mqlite::Engine::Open(std::move(*store));
  if (!engine) return Fail("engine", engine.status());
  mqlite::Engine& e = **engine;

  for (const char* q : {"orders", "shipments"}) {
    mqlite::QueueConfig c;
    c.name = q;
    c.max_delivery_count = 3;
    if (auto s = e.CreateQueue(c); !s) return Fail(q, s.status());
  }
  mqlite::TypedQueue<Order, mqlite::JsonCodec<Order>> orders(e, "orders");
  mqlite::TypedQueue<Shipment, mqlite::JsonCodec<Shipment>> shipments(e, "shipments");

  for (int i = 0; i < n; ++i) {
    if (auto s = orders.Send({"order-" + std::to_string(i), 1 + i % 7}); !s) {
      return Fail("send", s.status());
    }
  }
  (void)orders.Send({"order-bad-qty", -2});
  (void)e.Send("orders", {.body = "{oops, not JSON"});

  mqlite::ProcessorOptions options;
  options.queues = {"orders"};
  options.concurrency = 4;
  options.prefetch = 16;
  options.wait_ms = 1'000;
  options.retry.initial_backoff_ms = 100;
  options.retry.max_backoff_ms = 2'000;

  const auto t0 = std::chrono::steady_clock::now();
  auto processor = mqlite::Processor::StartTx(
      e, options,
      orders.HandleTx([&](const Order& o, const mqlite::Message&, mqlite::TxContext& tx,
                          const mqlite::HandlerContext& ctx) -> mqlite::Result<mqlite::HandlerVerdict> {
        if (o.qty <= 0) {
          return mqlite::HandlerVerdict::Reject("InvalidQuantity", "qty " + std::to_string(o.qty));
        }
        // The shipment is sent in the order's transaction: it exists iff the
        // order is completed.
        if (auto s = shipments.Send(tx, {o.id, (o.qty + 2) / 3}); !s) return s.status();
        if (std::hash<std::string>{}(o.id) % 10 == 0 && ctx.attempt == 1) {
          return mqlite::Status::Unavailable("carrier API timed out");  // retried after a backoff
        }
        return mqlite::HandlerVerdict::Complete();
      }));
  if (!processor) return Fail("start", processor.status());

  // Progress until nothing is left to deliver (active, locked or in backoff).
  for (;;) {
    auto st = e.Stats("orders");
    if (!st) return Fail("stats", st.status());
    const mqlite::ProcessorStats ps = (*processor)->stats();
    std::printf("orders: %lld active, %lld locked, %lld scheduled, %lld dead  |  completed %lld, "
                "retried %lld\n",
                (long long)st->active, (long long)st->locked, (long long)st->scheduled,
                (long long)st->dead_lettered, (long long)ps.completed, (long long)ps.retried);
    if (st->active + st->locked + st->scheduled == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (auto s = (*processor)->Stop(std::chrono::seconds(10)); !s.ok()) return Fail("stop", s);

  const mqlite::ProcessorStats ps = (*processor)->stats();
  std::printf(
      "\nprocessed %d orders in %.2f s: received %lld, completed %lld, retried %lld, "
      "dead-lettered %lld, renewals %lld, handler p50 %lld us, p99 %lld us\n",
      n + 2, secs, (long long)ps.received, (long long)ps.completed, (long long)ps.retried,
      (long long)ps.dead_lettered, (long long)ps.renewals, (long long)ps.handler_latency.p50_us,
      (long long)ps.handler_latency.p99_us);

  // Check what a reviewer would: every valid order shipped once, the two bad
  // ones dead-lettered with their reasons, no failed attempt left a shipment.
  int ok = 1;
  auto ship = e.Stats("shipments");
  if (!ship || ship->total != n) {
    std::fprintf(stderr, "expected %d shipments, have %lld\n", n,
                 ship ? (long long)ship->total : -1LL);
    ok = 0;
  }
  auto dlq = e.Peek("orders", {.state = mqlite::MessageState::kDeadLettered});
  if (!dlq || dlq->size() != 2) {
    std::fprintf(stderr, "expected 2 dead letters\n");
    ok = 0;
  } else {
    for (const mqlite::Message& m : *dlq) {
      std::printf("dead letter seq %lld: %s (%s)\n", (long long)m.seq,
                  m.dead_letter_reason.value_or("").c_str(),
                  m.dead_letter_description.value_or("").c_str());
    }
  }
  (void)e.Close();
  if (remove_after) {
    for (const char* f : {"processor_example.db", "processor_example.db-wal",
                          "processor_example.db-shm"}) {
      std::filesystem::remove(f);
    }
  }
  std::printf(ok ? "all orders accounted for\n" : "FAILED\n");
  return ok ? 0 : 1;
}
