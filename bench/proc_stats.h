// Process counters for the benchmarks (Linux /proc): bytes written and peak
// resident memory. Each reads the kernel's own accounting for this process.
#ifndef MQLITE_BENCH_PROC_STATS_H_
#define MQLITE_BENCH_PROC_STATS_H_

#include <cstdint>

namespace mqlite::bench {

struct IoCounters {
  int64_t wchar = 0;        // bytes handed to write(2)-family calls
  int64_t write_bytes = 0;  // bytes the kernel sent (or will send) to the device
};

// /proc/self/io; zeros if unreadable.
IoCounters ReadIo();

// Resets the peak-RSS high-water mark to the current RSS (writes "5" to
// /proc/self/clear_refs). False if the kernel refused.
bool ResetPeakRss();

// VmHWM from /proc/self/status in MB (10^6 bytes); 0 if unreadable.
double PeakRssMB();

}  // namespace mqlite::bench

#endif  // MQLITE_BENCH_PROC_STATS_H_
