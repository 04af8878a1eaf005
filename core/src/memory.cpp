#include "flashsim/memory.h"

#include <fstream>
#include <string>

namespace flashsim {

namespace {
// The value in kB of a "Key:   123 kB" line of a /proc file, in bytes; 0 when absent.
int64_t proc_kb_field(const char* path, const std::string& key) {
  std::ifstream f(path);
  std::string name;
  int64_t kb = 0;
  while (f >> name) {
    if (name == key) {
      f >> kb;
      return kb * 1024;
    }
    f.ignore(1 << 12, '\n');
  }
  return 0;
}
}  // namespace

int64_t available_memory_bytes() {
  return proc_kb_field("/proc/meminfo", "MemAvailable:");
}

int64_t default_memory_limit() {
  const int64_t avail = available_memory_bytes();
  return avail > 0 ? avail / 5 * 4 : int64_t{8} << 30;
}

int64_t peak_rss_bytes() {
  return proc_kb_field("/proc/self/status", "VmHWM:");
}

}  // namespace flashsim
