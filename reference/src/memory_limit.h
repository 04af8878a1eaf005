#pragma once
// The memory guard: an operation states the bytes its buffers need before allocating any of them.
#include <cstdint>
#include <string_view>

#include "problem_context.h"

namespace flashsim::ref::detail {

// Throws MemoryLimitError ("<what> needs N bytes (X GiB), over the limit of M bytes") when bytes exceeds
// ctx.opt.max_memory_bytes, or 80% of the memory available now when that is 0.
void require_memory(const ProblemContext& ctx, int64_t bytes, std::string_view what);

}  // namespace flashsim::ref::detail
