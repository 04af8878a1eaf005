#pragma once
// Memory available to flashsim and the default limit its operations refuse to exceed.
#include <cstdint>

namespace flashsim {

// MemAvailable from /proc/meminfo (bytes), or 0 when it cannot be read.
int64_t available_memory_bytes();
// 80% of available_memory_bytes() (so the OS and other processes keep a margin), or 8 GiB when unknown.
int64_t default_memory_limit();
// Peak resident set size of this process so far (VmHWM), bytes; 0 when unknown.
int64_t peak_rss_bytes();

}  // namespace flashsim
