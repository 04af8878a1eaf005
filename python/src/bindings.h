#pragma once
// The parts of the native module, one file each.
#include <nanobind/nanobind.h>

namespace flashsim::py {

namespace nb = nanobind;

void bind_reference(nanobind::module_& m);  // attention, attention_backward
void bind_golden(nanobind::module_& m);     // cases, verify, generate
void bind_sim(nanobind::module_& m);        // predict, sweep

}  // namespace flashsim::py
