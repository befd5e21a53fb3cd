#include "model_check.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

namespace mqlite::tck {
namespace {

// ---- The reference model ------------------------------------------------------

struct MMsg {
  int64_t seq = 0;
  std::string queue;
  OutgoingMessage src;  // body, ids, properties, priority as sent
  std::optional<std::string> group_key;
  int64_t enqueued_at = 0, visible_at = 0, expires_at = 0;
  int32_t dc = 0;
  MessageState state = MessageState::kActive;
  int64_t locked_until = 0;
  LockToken token;
  std::optional<std::string> reason, desc;
  int64_t dead_at = 0;
};

struct ReceiptKey {
  std::string queue;
  int64_t seq;
  LockToken token;
  SettleOp op;
  int64_t delay;
  std::string reason, desc;
  auto Tie() const { return std::tie(queue, seq, token.bytes, op, delay, reason, desc); }
  bool operator<(const ReceiptKey& o) const { return Tie() < o.Tie(); }
};

struct AttemptRec {
  std::string queue;
  ReceiveMode mode;
  std::vector<std::pair<int64_t, LockToken>> claimed;
  int64_t expires = 0;
};

struct DedupRec {
  int64_t seq;
  std::string body;
  int64_t expires;
};

struct SettleCall {
  std::string queue;
  int64_t seq;
  LockToken token;
  SettleOp op;
  int64_t delay = 0;
  std::string reason, desc;
};

struct Expected {
  StatusCode code = StatusCode::kOk;
  int64_t locked_until = 0;
};

class Model {
 public:
  explicit Model(const EngineOptions& eo) : eo_(eo) {}

  std::map<std::string, QueueConfig> queues;
  std::map<int64_t, MMsg> msgs;
  int64_t last_seq = 0;

  bool Live(const MMsg& m) const { return m.state != MessageState::kDeadLettered; }
  bool Expired(const MMsg& m, int64_t now) const { return m.expires_at > 0 && m.expires_at <= now; }
  const QueueConfig& Q(const std::string& name) const { return queues.at(name); }

  bool IsHead(const MMsg& m) const {
    if (!m.group_key) return true;
    for (const auto& [seq, o] : msgs) {
      if (seq >= m.seq) break;
      if (o.queue == m.queue && o.group_key == m.group_key && Live(o)) return false;
    }
    return true;
  }

  void DeadLetter(MMsg& m, std::string reason, std::optional<std::string> desc, int64_t now) {
    m.state = MessageState::kDeadLettered;
    m.token = LockToken{};
    m.locked_until = 0;
    m.reason = std::move(reason);
    m.desc = std::move(desc);
    m.dead_at = now;
  }

  void Expire(int64_t seq, int64_t now) {
    MMsg& m = msgs.at(seq);
    if (Q(m.queue).dead_letter_on_expire) {
      DeadLetter(m, std::string(kReasonTtlExpired), std::nullopt, now);
    } else {
      msgs.erase(seq);
    }
  }

  void Unlock(MMsg& m, MessageState to) {
    m.state = to;
    m.token = LockToken{};
    m.locked_until = 0;
  }

  void PromoteDue(const std::string& q, int64_t now) {
    for (auto& [seq, m] : msgs) {
      if (m.queue == q && m.state == MessageState::kScheduled && m.visible_at <= now) {
        m.state = MessageState::kActive;
      }
    }
  }

  void ReclaimLocks(const std::string& q, int64_t now, bool all) {
    for (auto& [seq, m] : msgs) {
      if (m.queue != q || m.state != MessageState::kLocked) continue;
      if (!all && m.locked_until > now) continue;
      if (m.dc >= Q(q).max_delivery_count) {
        DeadLetter(m, std::string(kReasonMaxDelivery), std::nullopt, now);
      } else {
        Unlock(m, MessageState::kActive);
      }
    }
  }

  void ExpireMessages(const std::string& q, int64_t now) {
    std::vector<int64_t> victims;
    for (auto& [seq, m] : msgs) {
      if (m.queue == q && Expired(m, now) &&
          (m.state == MessageState::kActive || m.state == MessageState::kScheduled ||
           m.state == MessageState::kDeferred)) {
        victims.push_back(seq);
      }
    }
    for (int64_t s : victims) Expire(s, now);
  }

  std::vector<int64_t> OldestDead(const std::string& q, int64_t cutoff) const {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (const auto& [seq, m] : msgs) {
      if (m.queue == q && !Live(m) && m.dead_at <= cutoff) v.emplace_back(m.dead_at, seq);
    }
    std::sort(v.begin(), v.end());
    std::vector<int64_t> out;
    for (auto& p : v) out.push_back(p.second);
    return out;
  }

  void EnforceRetention(const std::string& q, int64_t now) {
    const QueueConfig& c = Q(q);
    auto resolve = [](int64_t qv, int64_t ev) { return qv < 0 ? -1 : qv > 0 ? qv : (ev > 0 ? ev : -1); };
    int64_t max_age = resolve(c.dlq_max_age_ms, eo_.dlq_max_age_ms);
    int64_t max_count = resolve(c.dlq_max_count, eo_.dlq_max_count);
    int64_t max_bytes = resolve(c.dlq_max_bytes, eo_.dlq_max_bytes);
    auto dead = OldestDead(q, INT64_MAX);
    int64_t count = static_cast<int64_t>(dead.size()), bytes = 0;
    for (int64_t s : dead) bytes += static_cast<int64_t>(msgs.at(s).src.body.size());
    for (int64_t s : dead) {
      const MMsg& m = msgs.at(s);
      bool over = (max_age > 0 && m.dead_at <= now - max_age) || (max_count > 0 && count > max_count) ||
                  (max_bytes > 0 && bytes > max_bytes);
      if (!over) break;
      count -= 1;
      bytes -= static_cast<int64_t>(m.src.body.size());
      msgs.erase(s);
    }
  }

  void Maintenance(int64_t now) {
    for (const auto& [name, c] : queues) {
      PromoteDue(name, now);
      ReclaimLocks(name, now, false);
      ExpireMessages(name, now);
      EnforceRetention(name, now);
    }
  }

  void Reopen(int64_t now, bool exclusive) {
    if (!exclusive) return;
    for (const auto& [name, c] : queues) ReclaimLocks(name, now, true);
  }

  // SPEC §5: claim in priority/seq order, one per group, expiring and
  // dead-lettering the candidates it meets. Returns the seqs in claim order
  // and applies the changes (PeekLock tokens are filled in by the caller).
  std::vector<int64_t> Claim(const std::string& q, int64_t now, int max, ReceiveMode mode,
                             std::vector<Message>* copies) {
    PromoteDue(q, now);
    ReclaimLocks(q, now, false);
    std::vector<int64_t> out;
    std::set<std::string> taken;
    std::set<int64_t> skipped;
    const QueueConfig& c = Q(q);
    while (static_cast<int>(out.size()) < max) {
      const MMsg* best = nullptr;
      for (const auto& [seq, m] : msgs) {
        if (m.queue != q || m.state != MessageState::kActive || skipped.count(seq) || !IsHead(m)) continue;
        if (!best || m.src.priority > best->src.priority) best = &m;
      }
      if (!best) break;
      int64_t seq = best->seq;
      MMsg& m = msgs.at(seq);
      if (m.group_key && taken.count(*m.group_key)) {
        skipped.insert(seq);
        continue;
      }
      if (Expired(m, now)) {
        Expire(seq, now);
        continue;
      }
      if (m.dc >= c.max_delivery_count) {
        DeadLetter(m, std::string(kReasonMaxDelivery), std::nullopt, now);
        continue;
      }
      m.dc += 1;
      out.push_back(seq);
      if (m.group_key) taken.insert(*m.group_key);
      if (mode == ReceiveMode::kPeekLock) {
        m.state = MessageState::kLocked;
        m.locked_until = now + c.lock_duration_ms;
      } else {
        Message copy = ToMessage(m);
        copy.state = MessageState::kActive;
        copies->push_back(copy);
        msgs.erase(seq);
      }
    }
    return out;
  }

  Expected Settle(const SettleCall& s, int64_t now) {
    auto it = msgs.find(s.seq);
    const QueueConfig& c = Q(s.queue);
    ReceiptKey key{s.queue, s.seq, s.token, s.op, s.op == SettleOp::kAbandon ? s.delay : 0,
                   s.op == SettleOp::kReject ? s.reason : "", s.op == SettleOp::kReject ? s.desc : ""};
    bool ok = it != msgs.end() && it->second.queue == s.queue &&
              it->second.state == MessageState::kLocked && it->second.token == s.token &&
              it->second.locked_until > now;
    if (!ok) {
      if (s.op != SettleOp::kRenew) {
        auto r = receipts_.find(key);
        if (r != receipts_.end() && r->second > now) return {};
      }
      return {StatusCode::kLockLost, 0};
    }
    MMsg& m = it->second;
    Expected e;
    switch (s.op) {
      case SettleOp::kComplete:
        msgs.erase(it);
        break;
      case SettleOp::kAbandon:
        if (m.dc >= c.max_delivery_count) {
          DeadLetter(m, std::string(kReasonMaxDelivery), std::nullopt, now);
        } else if (s.delay > 0) {
          Unlock(m, MessageState::kScheduled);
          m.visible_at = now + s.delay;
        } else {
          Unlock(m, MessageState::kActive);
        }
        break;
      case SettleOp::kReject:
        DeadLetter(m, s.reason, s.desc, now);
        break;
      case SettleOp::kDefer:
        Unlock(m, MessageState::kDeferred);
        break;
      case SettleOp::kRenew:
        m.locked_until = std::max(m.locked_until, now + c.lock_duration_ms);
        e.locked_until = m.locked_until;
        break;
    }
    if (s.op != SettleOp::kRenew) receipts_[key] = now + eo_.receipt_retention_ms;
    return e;
  }

  Message ToMessage(const MMsg& m) const {
    Message x;
    x.seq = m.seq;
    x.queue = m.queue;
    x.body = m.src.body;
    x.message_id = m.src.message_id;
    x.group_id = m.src.group_id;
    x.subject = m.src.subject;
    x.correlation_id = m.src.correlation_id;
    x.content_type = m.src.content_type;
    x.properties = m.src.properties;
    x.priority = m.src.priority;
    x.enqueued_at = m.enqueued_at;
    x.visible_at = m.visible_at;
    x.expires_at = m.expires_at;
    x.delivery_count = m.dc;
    x.state = m.state;
    x.locked_until = m.locked_until;
    x.lock_token = m.token;
    x.dead_letter_reason = m.reason;
    x.dead_letter_description = m.desc;
    x.dead_lettered_at = m.dead_at;
    return x;
  }

  std::map<std::string, AttemptRec> attempts;
  std::map<std::pair<std::string, std::string>, DedupRec> dedup;
  const EngineOptions& eo() const { return eo_; }

 private:
  EngineOptions eo_;
  std::map<ReceiptKey, int64_t> receipts_;
};

// ---- Comparison helpers ------------------------------------------------------------

std::string Describe(const Message& m) {
  std::ostringstream o;
  o << "{seq " << m.seq << " " << MessageStateName(m.state) << " dc " << m.delivery_count
    << " prio " << m.priority << " lu " << m.locked_until << " vis " << m.visible_at << " exp "
    << m.expires_at << " enq " << m.enqueued_at << " group "
    << (m.group_id ? *m.group_id : "-") << " reason "
    << (m.dead_letter_reason ? *m.dead_letter_reason : "-") << " dead_at " << m.dead_lettered_at
    << " token " << m.lock_token.ToHex().substr(0, 8) << "}";
  return o.str();
}

std::string DiffMessage(const Message& want, const Message& got) {
  bool same = want.seq == got.seq && want.queue == got.queue && want.body == got.body &&
              want.message_id == got.message_id && want.group_id == got.group_id &&
              want.subject == got.subject && want.correlation_id == got.correlation_id &&
              want.content_type == got.content_type && want.properties == got.properties &&
              want.priority == got.priority && want.enqueued_at == got.enqueued_at &&
              want.visible_at == got.visible_at && want.expires_at == got.expires_at &&
              want.delivery_count == got.delivery_count && want.state == got.state &&
              want.locked_until == got.locked_until && want.lock_token == got.lock_token &&
              want.dead_letter_reason == got.dead_letter_reason &&
              want.dead_letter_description == got.dead_letter_description &&
              want.dead_lettered_at == got.dead_lettered_at;
  if (same) return "";
  return "want " + Describe(want) + "\n      got  " + Describe(got);
}

// ---- The driver ---------------------------------------------------------------------

class Driver {
 public:
  Driver(const EngineFactory& factory, const ModelCheckOptions& o)
      : factory_(factory), opt_(o), rng_(o.seed), model_(Eo()) {}

  std::string Run() {
    auto e = factory_(&clock_);
    if (!e) return "factory failed: " + e.error().ToString();
    engine_ = std::move(*e);
    if (auto f = Setup(); !f.empty()) return Fail(f);
    for (step_ = 0; step_ < opt_.steps; ++step_) {
      std::string f = Step();
      if (f.empty()) f = CompareAll();
      if (!f.empty()) return Fail(f);
    }
    return "";
  }

  static EngineOptions Eo() {
    EngineOptions eo;
    eo.background_maintenance = false;
    return eo;
  }

 private:
  std::string Fail(const std::string& what) {
    std::ostringstream o;
    o << "model divergence (seed " << opt_.seed << ", step " << step_ << "): " << what
      << "\n  recent operations:";
    for (const auto& h : history_) o << "\n    " << h;
    return o.str();
  }

  void Log(const std::string& s) {
    history_.push_back("[" + std::to_string(step_) + "] " + s);
    if (history_.size() > 25) history_.pop_front();
  }

  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool Chance(int percent) { return Pick(100) < percent; }
  int64_t Now() { return clock_.NowMs(); }

  std::string Setup() {
    QueueConfig std_q{.name = "std", .lock_duration_ms = 30'000, .max_delivery_count = 3,
                      .dedup_window_ms = 120'000, .dlq_max_count = 5};
    QueueConfig gf{.name = "gf", .lock_duration_ms = 10'000, .max_delivery_count = 2,
                   .default_ttl_ms = 600'000, .dead_letter_on_expire = false,
                   .ordering = Ordering::kGroupFifo};
    QueueConfig sf{.name = "sf", .lock_duration_ms = 20'000, .max_delivery_count = 4,
                   .ordering = Ordering::kStrictFifo};
    for (const QueueConfig& c : {std_q, gf, sf}) {
      auto r = engine_->CreateQueue(c);
      if (!r) return "CreateQueue: " + r.error().ToString();
      model_.queues[c.name] = c;
      names_.push_back(c.name);
    }
    return "";
  }

  std::string Dump(const std::string& q) {
    std::string out;
    for (const auto& [seq, m] : model_.msgs) {
      if (m.queue == q) out += "\n      " + Describe(model_.ToMessage(m));
    }
    return out;
  }

  std::string Code(StatusCode c) { return std::string(StatusCodeName(c)); }

  std::string CheckCode(const char* op, StatusCode want, const Status& got) {
    if (want == got.code()) return "";
    return std::string(op) + ": want " + Code(want) + ", got " + got.ToString();
  }

  OutgoingMessage RandomMessage(const std::string& q) {
    static const char* kBodies[] = {"a", "b", "", "payload", "x\0y", "\xc3\xbc-utf8"};
    OutgoingMessage m;
    int b = Pick(6);
    m.body = b == 4 ? std::string("x\0y", 3) : std::string(kBodies[b]);
    if (Chance(40)) m.body += std::to_string(Pick(5));
    if (q == "std" && Chance(35)) m.message_id = "m" + std::to_string(Pick(4));
    if (q == "gf" || (q == "std" && Chance(50)) || (q == "sf" && Chance(30))) {
      m.group_id = std::string(1, static_cast<char>('A' + Pick(3)));
    }
    if (Chance(20)) m.subject = Chance(50) ? "" : "subj";
    if (Chance(20)) m.properties["k" + std::to_string(Pick(3))] = "v";
    m.priority = Pick(10);
    if (Chance(25)) m.delay_ms = std::vector<int64_t>{5'000, 40'000, 300'000}[Pick(3)];
    if (Chance(25)) m.ttl_ms = std::vector<int64_t>{15'000, 60'000, 1'200'000}[Pick(3)];
    return m;
  }

  // SPEC §4, applied to the model after the engine answered.
  std::string ApplySend(const std::string& q, const std::vector<OutgoingMessage>& batch, bool single,
                        const Result<std::vector<int64_t>>& got) {
    const QueueConfig& c = model_.Q(q);
    const int64_t now = Now();
    if (c.ordering == Ordering::kGroupFifo) {
      for (const auto& m : batch) {
        if (!m.group_id) return CheckCode("Send", StatusCode::kGroupRequired, got.status());
      }
    }
    std::vector<int64_t> want(batch.size(), 0);
    std::vector<int> fresh;  // slots that insert
    std::map<std::string, size_t> first;
    std::vector<std::pair<size_t, size_t>> refs;
    bool conflict_single = false;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (c.dedup_window_ms <= 0) {
        fresh.push_back(static_cast<int>(i));
        continue;
      }
      const auto& m = batch[i];
      std::string key = m.message_id && !m.message_id->empty() ? "i" + *m.message_id : "h" + m.body;
      if (auto f = first.find(key); f != first.end()) {
        if (batch[f->second].body == m.body) refs.emplace_back(i, f->second);
        else if (single) conflict_single = true;
        continue;
      }
      auto d = model_.dedup.find({q, key});
      if (d != model_.dedup.end() && d->second.expires > now) {
        if (d->second.body == m.body) want[i] = d->second.seq;
        else if (single) conflict_single = true;
        continue;
      }
      first[key] = i;
      fresh.push_back(static_cast<int>(i));
    }
    if (conflict_single) return CheckCode("Send", StatusCode::kDedupConflict, got.status());
    if (!got) return "Send: unexpected " + got.error().ToString();
    if (got->size() != batch.size()) return "Send: wrong number of seqs";
    for (int i : fresh) {
      int64_t seq = (*got)[i];
      if (seq <= model_.last_seq) {
        return "Send: seq " + std::to_string(seq) + " not above every earlier seq " +
               std::to_string(model_.last_seq) + " (G1)";
      }
      model_.last_seq = seq;
      want[i] = seq;
      const auto& src = batch[i];
      MMsg m;
      m.seq = seq;
      m.queue = q;
      m.src = src;
      m.group_key = GroupKeyFor(c.ordering, src.group_id);
      m.enqueued_at = now;
      m.visible_at = src.delay_ms > 0 ? now + src.delay_ms : now;
      m.state = src.delay_ms > 0 ? MessageState::kScheduled : MessageState::kActive;
      int64_t ttl = src.ttl_ms;
      if (c.default_ttl_ms > 0 && (ttl == 0 || ttl > c.default_ttl_ms)) ttl = c.default_ttl_ms;
      m.expires_at = ttl > 0 ? m.visible_at + ttl : 0;
      model_.msgs[seq] = m;
      if (c.dedup_window_ms > 0) {
        std::string key = src.message_id && !src.message_id->empty() ? "i" + *src.message_id : "h" + src.body;
        model_.dedup[{q, key}] = DedupRec{seq, src.body, now + c.dedup_window_ms};
      }
    }
    for (auto [slot, earlier] : refs) want[slot] = want[earlier];
    if (*got != want) {
      std::ostringstream o;
      o << "Send seqs: want";
      for (auto s : want) o << " " << s;
      o << ", got";
      for (auto s : *got) o << " " << s;
      return o.str();
    }
    return "";
  }

  std::string DoSend() {
    std::string q = names_[Pick(3)];
    int n = Chance(70) ? 1 : 1 + Pick(4);
    std::vector<OutgoingMessage> batch;
    for (int i = 0; i < n; ++i) batch.push_back(RandomMessage(q));
    if (q == "gf" && Chance(5)) batch[0].group_id.reset();  // GroupRequired path
    Log("send " + q + " x" + std::to_string(n));
    if (n == 1 && Chance(70)) {
      auto r = engine_->Send(q, batch[0]);
      Result<std::vector<int64_t>> as_vec =
          r ? Result<std::vector<int64_t>>(std::vector<int64_t>{*r}) : Result<std::vector<int64_t>>(r.error());
      return ApplySend(q, batch, true, as_vec);
    }
    auto r = engine_->SendBatch(q, batch);
    Result<std::vector<int64_t>> as_vec = Result<std::vector<int64_t>>(std::vector<int64_t>{});
    if (r) {
      std::vector<int64_t> seqs;
      for (const SendOutcome& o : *r) seqs.push_back(o.seq);
      as_vec = std::move(seqs);
    } else {
      as_vec = r.error();
    }
    return ApplySend(q, batch, false, as_vec);
  }

  std::string DoReceive() {
    std::string q = names_[Pick(3)];
    ReceiveOptions o;
    o.max_messages = 1 + Pick(4);
    o.mode = Chance(80) ? ReceiveMode::kPeekLock : ReceiveMode::kReceiveAndDelete;
    if (Chance(20)) o.attempt_id = "at" + std::to_string(Pick(2));
    Log("receive " + q + " max " + std::to_string(o.max_messages) +
        (o.mode == ReceiveMode::kPeekLock ? " peek-lock" : " receive-and-delete") +
        (o.attempt_id ? " attempt " + *o.attempt_id : ""));
    auto got = engine_->Receive(q, o);
    const int64_t now = Now();
    if (o.attempt_id) {
      auto a = model_.attempts.find(*o.attempt_id);
      if (a != model_.attempts.end() && a->second.expires > now) {
        if (a->second.queue != q || a->second.mode != o.mode) {
          return CheckCode("Receive(attempt mismatch)", StatusCode::kInvalidArgument, got.status());
        }
        if (!got) return "Receive replay: " + got.error().ToString();
        if (got->size() != a->second.claimed.size()) return "Receive replay: different batch size";
        for (size_t i = 0; i < got->size(); ++i) {
          if ((*got)[i].seq != a->second.claimed[i].first ||
              !((*got)[i].lock_token == a->second.claimed[i].second)) {
            return "Receive replay: different seq or token at slot " + std::to_string(i);
          }
        }
        return "";
      }
    }
    std::vector<Message> copies;
    std::string before = Dump(q);
    std::vector<int64_t> want = model_.Claim(q, now, o.max_messages, o.mode, &copies);
    if (!got) return "Receive: " + got.error().ToString();
    std::vector<int64_t> seqs;
    for (const auto& m : *got) seqs.push_back(m.seq);
    if (seqs != want) {
      std::ostringstream s;
      s << "Receive claimed";
      for (auto x : seqs) s << " " << x;
      s << ", model expects";
      for (auto x : want) s << " " << x;
      s << " at now " << now << "; queue " << q << " before:" << before;
      return s.str();
    }
    for (size_t i = 0; i < got->size(); ++i) {
      const Message& m = (*got)[i];
      if (o.mode == ReceiveMode::kPeekLock) {
        if (m.lock_token.empty()) return "Receive: empty token in peek-lock";
        MMsg& mm = model_.msgs.at(m.seq);
        mm.token = m.lock_token;
        handles_.push_back({q, m.seq, m.lock_token});
        if (handles_.size() > 60) handles_.erase(handles_.begin());
        if (auto d = DiffMessage(model_.ToMessage(mm), m); !d.empty()) return "Receive message: " + d;
      } else {
        if (auto d = DiffMessage(copies[i], m); !d.empty()) return "Receive-and-delete copy: " + d;
      }
    }
    if (o.attempt_id && !got->empty()) {
      AttemptRec rec{q, o.mode, {}, now + model_.eo().attempt_retention_ms};
      for (const auto& m : *got) rec.claimed.emplace_back(m.seq, m.lock_token);
      model_.attempts[*o.attempt_id] = rec;
    }
    return "";
  }

  SettleCall RandomSettleCall() {
    SettleCall s;
    if (!done_.empty() && Chance(15)) {
      s = done_[Pick(static_cast<int>(done_.size()))];  // replay
      if (Chance(30)) {  // replay with a changed argument → must be LockLost
        if (s.op == SettleOp::kAbandon) s.delay += 1000;
        else if (s.op == SettleOp::kReject) s.reason += "!";
        else s.op = s.op == SettleOp::kComplete ? SettleOp::kDefer : SettleOp::kComplete;
      }
      return s;
    }
    if (!handles_.empty() && Chance(85)) {
      // Prefer recent handles: mostly live, some stale.
      int n = static_cast<int>(handles_.size());
      const auto& h = handles_[Chance(70) ? n - 1 - Pick(std::min(n, 5)) : Pick(n)];
      s.queue = h.queue;
      s.seq = h.seq;
      s.token = h.token;
    } else {
      s.queue = names_[Pick(3)];
      s.seq = model_.msgs.empty() || Chance(30) ? 1 + Pick(100) : std::next(model_.msgs.begin(), Pick(static_cast<int>(model_.msgs.size())))->first;
      auto it = model_.msgs.find(s.seq);
      if (it != model_.msgs.end()) s.queue = it->second.queue;
      s.token.bytes[0] = static_cast<uint8_t>(1 + Pick(200));  // wrong token
    }
    if (Chance(10) && !names_.empty()) s.queue = names_[Pick(3)];  // maybe another queue (§2)
    int op = Pick(10);
    s.op = op < 4 ? SettleOp::kComplete : op < 6 ? SettleOp::kAbandon : op < 7 ? SettleOp::kReject
         : op < 8 ? SettleOp::kDefer : SettleOp::kRenew;
    if (s.op == SettleOp::kAbandon && Chance(40)) s.delay = std::vector<int64_t>{1'000, 50'000}[Pick(2)];
    if (s.op == SettleOp::kReject) {
      s.reason = Chance(50) ? "bad" : "worse";
      s.desc = Chance(50) ? "" : "details";
    }
    return s;
  }

  static std::string OpText(const SettleCall& s) {
    return std::string(SettleOpName(s.op)) + " " + s.queue + " seq " + std::to_string(s.seq) +
           " token " + s.token.ToHex().substr(0, 8) +
           (s.op == SettleOp::kAbandon ? " delay " + std::to_string(s.delay) : "") +
           (s.op == SettleOp::kReject ? " reason " + s.reason + "/" + s.desc : "");
  }

  Result<int64_t> EngineSettle(const SettleCall& s) {
    switch (s.op) {
      case SettleOp::kComplete: {
        Status st = engine_->Complete(s.queue, s.seq, s.token);
        return st.ok() ? Result<int64_t>(0) : Result<int64_t>(st);
      }
      case SettleOp::kAbandon: {
        Status st = engine_->Abandon(s.queue, s.seq, s.token, s.delay);
        return st.ok() ? Result<int64_t>(0) : Result<int64_t>(st);
      }
      case SettleOp::kReject: {
        Status st = engine_->Reject(s.queue, s.seq, s.token, s.reason, s.desc);
        return st.ok() ? Result<int64_t>(0) : Result<int64_t>(st);
      }
      case SettleOp::kDefer: {
        Status st = engine_->Defer(s.queue, s.seq, s.token);
        return st.ok() ? Result<int64_t>(0) : Result<int64_t>(st);
      }
      case SettleOp::kRenew:
        return engine_->Renew(s.queue, s.seq, s.token);
    }
    return Status::Internal("unreachable");
  }

  std::string DoSettle() {
    SettleCall s = RandomSettleCall();
    Log(OpText(s));
    auto got = EngineSettle(s);
    Expected want = model_.Settle(s, Now());
    if (auto f = CheckCode("settle", want.code, got.status()); !f.empty()) return f;
    if (got && s.op == SettleOp::kRenew && *got != want.locked_until) {
      return "Renew locked_until: want " + std::to_string(want.locked_until) + ", got " + std::to_string(*got);
    }
    if (got && s.op != SettleOp::kRenew) {
      done_.push_back(s);
      if (done_.size() > 40) done_.erase(done_.begin());
    }
    return "";
  }

  std::string DoBatchSettle() {
    std::string q = names_[Pick(3)];
    std::vector<SettleCall> calls;
    int n = 1 + Pick(4);
    for (int i = 0; i < n; ++i) {
      SettleCall s = RandomSettleCall();
      s.queue = q;
      calls.push_back(s);
    }
    bool renew = Chance(40);
    std::vector<SettleItem> items;
    std::set<int64_t> seqs;
    for (auto& c : calls) {
      c.op = renew ? SettleOp::kRenew : SettleOp::kComplete;
      c.delay = 0;
      c.reason.clear();
      c.desc.clear();
      items.push_back({c.seq, c.token});
    }
    Log(std::string(renew ? "RenewBatch " : "CompleteBatch ") + q + " x" + std::to_string(n));
    const int64_t now = Now();
    if (renew) {
      auto got = engine_->RenewBatch(q, items);
      if (!got) return "RenewBatch: " + got.error().ToString();
      for (size_t i = 0; i < calls.size(); ++i) {
        Expected w = model_.Settle(calls[i], now);
        if (auto f = CheckCode("RenewBatch item", w.code, (*got)[i].status); !f.empty()) return f;
        if ((*got)[i].status.ok() && (*got)[i].locked_until != w.locked_until) return "RenewBatch locked_until";
      }
    } else {
      auto got = engine_->CompleteBatch(q, items);
      if (!got) return "CompleteBatch: " + got.error().ToString();
      for (size_t i = 0; i < calls.size(); ++i) {
        Expected w = model_.Settle(calls[i], now);
        if (auto f = CheckCode("CompleteBatch item", w.code, (*got)[i]); !f.empty()) return f;
        if ((*got)[i].ok()) done_.push_back(calls[i]);
      }
    }
    return "";
  }

  std::string DoReceiveDeferred() {
    std::string q = names_[Pick(3)];
    std::vector<int64_t> seqs;
    for (const auto& [seq, m] : model_.msgs) {
      if (m.queue == q && m.state == MessageState::kDeferred && seqs.size() < 2) seqs.push_back(seq);
    }
    if (seqs.empty() || Chance(20)) seqs.push_back(model_.last_seq + 1 + Pick(3));
    Log("ReceiveDeferred " + q + " x" + std::to_string(seqs.size()));
    auto got = engine_->ReceiveDeferred(q, seqs);
    const int64_t now = Now();
    bool all = true, retire = false;
    for (int64_t s : seqs) {
      auto it = model_.msgs.find(s);
      const bool deferred = it != model_.msgs.end() && it->second.queue == q &&
                            it->second.state == MessageState::kDeferred;
      all &= deferred;
      retire |= deferred && (model_.Expired(it->second, now) ||
                             it->second.dc >= model_.Q(q).max_delivery_count);
    }
    if (!all) return CheckCode("ReceiveDeferred", StatusCode::kNotFound, got.status());
    if (retire) {
      // Engine::ReceiveDeferred: the undeliverable ones are retired (and that
      // commits), nothing is locked, and the call answers NotFound.
      for (int64_t s : seqs) {
        MMsg& m = model_.msgs.at(s);
        if (model_.Expired(m, now)) {
          model_.Expire(s, now);
        } else if (m.dc >= model_.Q(q).max_delivery_count) {
          model_.DeadLetter(m, std::string(kReasonMaxDelivery), std::nullopt, now);
        }
      }
      return CheckCode("ReceiveDeferred", StatusCode::kNotFound, got.status());
    }
    if (!got) return "ReceiveDeferred: " + got.error().ToString();
    for (size_t i = 0; i < seqs.size(); ++i) {
      MMsg& m = model_.msgs.at(seqs[i]);
      m.state = MessageState::kLocked;
      m.dc += 1;
      m.locked_until = now + model_.Q(q).lock_duration_ms;
      m.token = (*got)[i].lock_token;
      handles_.push_back({q, m.seq, m.token});
      if (auto d = DiffMessage(model_.ToMessage(m), (*got)[i]); !d.empty()) return "ReceiveDeferred: " + d;
    }
    return "";
  }

  std::string DoCancel() {
    std::string q = names_[Pick(3)];
    int64_t seq = model_.msgs.empty() || Chance(20)
                      ? 1 + Pick(50)
                      : std::next(model_.msgs.begin(), Pick(static_cast<int>(model_.msgs.size())))->first;
    Log("Cancel " + q + " seq " + std::to_string(seq));
    Status got = engine_->Cancel(q, seq);
    auto it = model_.msgs.find(seq);
    bool ok = it != model_.msgs.end() && it->second.queue == q &&
              it->second.state == MessageState::kScheduled && it->second.dc == 0;
    if (ok) model_.msgs.erase(it);
    return CheckCode("Cancel", ok ? StatusCode::kOk : StatusCode::kNotFound, got);
  }

  std::string DoAdvance() {
    int64_t d = std::vector<int64_t>{1'000, 11'000, 31'000, 61'000, 600'000}[Pick(5)];
    Log("advance clock " + std::to_string(d) + " ms");
    clock_.Advance(d);
    return "";
  }

  std::string DoMaintenance() {
    Log("RunMaintenance");
    auto r = engine_->RunMaintenance();
    if (!r) return "RunMaintenance: " + r.error().ToString();
    model_.Maintenance(Now());
    return "";
  }

  std::string DoReopen() {
    Log("reopen");
    Status s = engine_->Close();
    if (!s.ok()) return "Close: " + s.ToString();
    engine_.reset();
    auto e = factory_(&clock_);
    if (!e) return "reopen: " + e.error().ToString();
    engine_ = std::move(*e);
    model_.Reopen(Now(), opt_.exclusive);
    return "";
  }

  std::string DoDlq() {
    std::string q = names_[Pick(3)];
    int64_t max = Chance(50) ? 0 : 1 + Pick(2);
    const int64_t now = Now();
    if (Chance(50)) {
      Log("Purge " + q + " max " + std::to_string(max));
      auto got = engine_->Purge(q, {.max_messages = max});
      auto victims = model_.OldestDead(q, now);
      if (max > 0 && static_cast<int64_t>(victims.size()) > max) victims.resize(max);
      for (int64_t s : victims) model_.msgs.erase(s);
      if (!got) return "Purge: " + got.error().ToString();
      if (*got != static_cast<int64_t>(victims.size())) return "Purge count";
      return "";
    }
    std::string target = names_[Pick(3)];
    Log("Redrive " + q + " -> " + target + " max " + std::to_string(max));
    auto got = engine_->Redrive(q, {.target_queue = target, .max_messages = max});
    auto victims = model_.OldestDead(q, now);
    if (max > 0 && static_cast<int64_t>(victims.size()) > max) victims.resize(max);
    const QueueConfig& tc = model_.Q(target);
    std::vector<int64_t> moved;
    for (int64_t s : victims) {
      if (tc.ordering == Ordering::kGroupFifo && !model_.msgs.at(s).src.group_id) continue;
      moved.push_back(s);
    }
    if (!got) return "Redrive: " + got.error().ToString();
    if (*got != static_cast<int64_t>(moved.size())) {
      return "Redrive count: want " + std::to_string(moved.size()) + ", got " + std::to_string(*got);
    }
    // Learn the new seqs: the store appends them in redrive order.
    PeekOptions po;
    po.from_seq = model_.last_seq;
    po.max_messages = 1000;
    auto fresh = engine_->Peek(target, po);
    if (!fresh) return "Peek after redrive: " + fresh.error().ToString();
    if (fresh->size() != moved.size()) return "Redrive: new messages in target do not match";
    for (size_t i = 0; i < moved.size(); ++i) {
      MMsg m = model_.msgs.at(moved[i]);
      model_.msgs.erase(moved[i]);
      m.seq = (*fresh)[i].seq;
      if (m.seq <= model_.last_seq) return "Redrive: seq not increasing (G1)";
      model_.last_seq = m.seq;
      m.queue = target;
      m.group_key = GroupKeyFor(tc.ordering, m.src.group_id);
      m.state = MessageState::kActive;
      m.dc = 0;
      m.visible_at = now;
      m.expires_at = tc.default_ttl_ms > 0 ? now + tc.default_ttl_ms : 0;
      m.reason.reset();
      m.desc.reset();
      m.dead_at = 0;
      model_.msgs[m.seq] = m;
    }
    return "";
  }

  std::string Step() {
    int r = Pick(100);
    if (r < 24) return DoSend();
    if (r < 44) return DoReceive();
    if (r < 64) return DoSettle();
    if (r < 69) return DoBatchSettle();
    if (r < 72) return DoReceiveDeferred();
    if (r < 75) return DoCancel();
    if (r < 86) return DoAdvance();
    if (r < 92) return DoMaintenance();
    if (r < 96) return DoDlq();
    if (opt_.reopen) return DoReopen();
    return DoAdvance();
  }

  std::string CompareAll() {
    const int64_t now = Now();
    for (const std::string& q : names_) {
      std::vector<Message> got;
      int64_t from = 0;
      for (;;) {
        PeekOptions po;
        po.from_seq = from;
        po.max_messages = 1000;
        auto page = engine_->Peek(q, po);
        if (!page) return "Peek " + q + ": " + page.error().ToString();
        if (page->empty()) break;
        from = page->back().seq;
        for (auto& m : *page) got.push_back(std::move(m));
      }
      std::vector<Message> want;
      for (const auto& [seq, m] : model_.msgs) {
        if (m.queue != q) continue;
        want.push_back(model_.ToMessage(m));
        want.back().lock_token = LockToken{};  // Peek never returns a token
      }
      for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
        if (i >= got.size()) return "queue " + q + ": store lost " + Describe(want[i]);
        if (i >= want.size()) return "queue " + q + ": store has extra " + Describe(got[i]);
        if (auto d = DiffMessage(want[i], got[i]); !d.empty()) return "queue " + q + ":\n      " + d;
      }
      auto st = engine_->Stats(q);
      if (!st) return "Stats: " + st.error().ToString();
      QueueStats w;
      const MMsg* oldest = nullptr;
      for (const auto& [seq, m] : model_.msgs) {
        if (m.queue != q) continue;
        switch (m.state) {
          case MessageState::kActive: ++w.active; break;
          case MessageState::kLocked: ++w.locked; break;
          case MessageState::kDeferred: ++w.deferred; break;
          case MessageState::kScheduled: ++w.scheduled; break;
          case MessageState::kDeadLettered: ++w.dead_lettered; break;
        }
        ++w.total;
        w.body_bytes += static_cast<int64_t>(m.src.body.size());
        // StoreTxn::Stats: what a Receive at `now` could claim.
        const bool claimable_state =
            m.state == MessageState::kActive ||
            (m.state == MessageState::kScheduled && m.visible_at <= now) ||
            (m.state == MessageState::kLocked && m.locked_until <= now);
        if (claimable_state && model_.IsHead(m) && !model_.Expired(m, now) &&
            m.dc < model_.Q(q).max_delivery_count &&
            (!oldest || m.enqueued_at < oldest->enqueued_at)) {
          oldest = &m;
        }
      }
      w.oldest_claimable_age_ms = oldest ? std::max<int64_t>(0, now - oldest->enqueued_at) : 0;
      if (st->active != w.active || st->locked != w.locked || st->deferred != w.deferred ||
          st->scheduled != w.scheduled || st->dead_lettered != w.dead_lettered || st->total != w.total ||
          st->body_bytes != w.body_bytes || st->oldest_claimable_age_ms != w.oldest_claimable_age_ms) {
        std::string dump;
        for (const auto& m : want) dump += "\n      " + Describe(m);
        return "Stats " + q + " at now " + std::to_string(now) + ":" + dump + "\n    differ (active/locked/deferred/scheduled/dead/total/bytes/age): want " +
               std::to_string(w.active) + "/" + std::to_string(w.locked) + "/" + std::to_string(w.deferred) + "/" +
               std::to_string(w.scheduled) + "/" + std::to_string(w.dead_lettered) + "/" + std::to_string(w.total) +
               "/" + std::to_string(w.body_bytes) + "/" + std::to_string(w.oldest_claimable_age_ms) + " got " +
               std::to_string(st->active) + "/" + std::to_string(st->locked) + "/" + std::to_string(st->deferred) +
               "/" + std::to_string(st->scheduled) + "/" + std::to_string(st->dead_lettered) + "/" +
               std::to_string(st->total) + "/" + std::to_string(st->body_bytes) + "/" +
               std::to_string(st->oldest_claimable_age_ms);
      }
    }
    return "";
  }

  struct Handle {
    std::string queue;
    int64_t seq;
    LockToken token;
  };

  const EngineFactory& factory_;
  ModelCheckOptions opt_;
  std::mt19937_64 rng_;
  ManualClock clock_;
  Model model_;
  std::unique_ptr<Engine> engine_;
  std::vector<std::string> names_;
  std::vector<Handle> handles_;
  std::vector<SettleCall> done_;
  std::deque<std::string> history_;
  int step_ = 0;
};

}  // namespace

std::string RunModelCheck(const EngineFactory& factory, const ModelCheckOptions& options) {
  Driver d(factory, options);
  return d.Run();
}

}  // namespace mqlite::tck
