#include "proc_stats.h"

#include <malloc.h>

#include <fstream>
#include <sstream>
#include <string>

namespace mqlite::bench {

IoCounters ReadIo() {
  IoCounters c;
  std::ifstream in("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "wchar:") c.wchar = value;
    if (key == "write_bytes:") c.write_bytes = value;
  }
  return c;
}

bool ResetPeakRss() {
  // Hand the heap that earlier benchmarks freed back to the kernel first:
  // the reset sets the peak to the RSS of this moment, and glibc keeps freed
  // memory mapped, so without it a benchmark's peak carried whatever ran
  // before it (e2e/4x4 read 21–49 MB in one run, 16 MB alone).
  (void)malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

double PeakRssMB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kb = 0;
      fields >> kb;
      return static_cast<double>(kb) * 1024.0 / 1e6;
    }
  }
  return 0;
}

}  // namespace mqlite::bench
