#include "memory_limit.h"

#include <fmt/format.h>

#include "flashsim/error.h"
#include "flashsim/memory.h"

namespace flashsim::ref::detail {

void require_memory(const ProblemContext& ctx, int64_t bytes, std::string_view what) {
  const int64_t limit = ctx.opt.max_memory_bytes > 0 ? ctx.opt.max_memory_bytes : default_memory_limit();
  if (bytes > limit)
    throw MemoryLimitError(fmt::format(
        "{} needs {} bytes ({:.2f} GiB), over the memory limit of {} bytes ({:.2f} GiB)", what, bytes,
        static_cast<double>(bytes) / (1 << 30), limit, static_cast<double>(limit) / (1 << 30)));
}

}  // namespace flashsim::ref::detail
