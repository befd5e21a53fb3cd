// The memory store's undo log: how a transaction (and a savepoint inside it)
// leaves no trace when it fails (SPEC §1, §8).
//
// Every mutation of a container — a message row, an index entry, a counter,
// an idempotency record, an application table entry — goes through this log,
// which applies it and records its inverse. RollbackTo(mark) replays the
// inverses newest first; Commit() forgets them. A savepoint is just a mark.
//
// Inverses capture the *container* (which lives as long as the database) and
// the *key*, never a reference to an element: an element may be erased and
// re-inserted (as a new node) by later inverses.
#ifndef MQLITE_STORES_MEMORY_SRC_UNDO_LOG_H_
#define MQLITE_STORES_MEMORY_SRC_UNDO_LOG_H_

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace mqlite::memory_internal {

class UndoLog {
 public:
  UndoLog() = default;
  UndoLog(const UndoLog&) = delete;
  UndoLog& operator=(const UndoLog&) = delete;

  size_t Mark() const { return inverses_.size(); }
  bool empty() const { return inverses_.empty(); }

  // Undoes everything recorded after `mark`, newest first.
  void RollbackTo(size_t mark) {
    while (inverses_.size() > mark) {
      std::function<void()> inverse = std::move(inverses_.back());
      inverses_.pop_back();
      inverse();
    }
  }
  void Commit() { inverses_.clear(); }

  // Records an inverse for a mutation the caller applied itself.
  void Record(std::function<void()> inverse) { inverses_.push_back(std::move(inverse)); }

  // Set (or map used as a set) insertion; no-op if present.
  template <class Set, class Key>
  void Insert(Set& set, Key key) {
    auto [it, inserted] = set.insert(key);
    (void)it;
    if (inserted) Record([&set, key = std::move(key)] { set.erase(key); });
  }

  // Set erasure; no-op if absent.
  template <class Set, class Key>
  void Erase(Set& set, const Key& key) {
    auto it = set.find(key);
    if (it == set.end()) return;
    Key copy = *it;
    set.erase(it);
    Record([&set, copy = std::move(copy)] { set.insert(copy); });
  }

  // Map assignment (insert or replace).
  template <class Map, class Key, class Value>
  void Put(Map& map, const Key& key, Value value) {
    auto it = map.find(key);
    if (it == map.end()) {
      map.emplace(key, std::move(value));
      Record([&map, key] { map.erase(key); });
      return;
    }
    typename Map::mapped_type old = std::move(it->second);
    it->second = std::move(value);
    Record([&map, key, old = std::move(old)]() mutable { map.find(key)->second = std::move(old); });
  }

  // Map erasure; no-op if absent.
  template <class Map, class Key>
  void EraseKey(Map& map, const Key& key) {
    auto it = map.find(key);
    if (it == map.end()) return;
    typename Map::mapped_type old = std::move(it->second);
    map.erase(it);
    Record([&map, key, old = std::move(old)]() mutable { map.emplace(key, std::move(old)); });
  }

 private:
  std::vector<std::function<void()>> inverses_;
};

}  // namespace mqlite::memory_internal

#endif  // MQLITE_STORES_MEMORY_SRC_UNDO_LOG_H_
