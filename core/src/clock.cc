#include "mqlite/clock.h"

#include <chrono>

namespace mqlite {
namespace {

class RealClock final : public Clock {
 public:
  int64_t NowMs() override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

Clock* SystemClock() {
  static RealClock* clock = new RealClock();  // never destroyed: usable at exit
  return clock;
}

}  // namespace mqlite
