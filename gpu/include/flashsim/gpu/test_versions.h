#pragma once
// The test-only kernel versions: planted bugs that a check must catch, kept out of the production registry
// (kernel_versions() lists them only after this call). Linked from flashsim::gpu_test_versions by the test
// and bench binaries: gpu_tests and flashsim-gpu, the driver of the GPU machine's runs (bench/gpu/).
namespace flashsim::gpu {

// Registers every planted version once (later calls do nothing):
//   fa2-v1-heads-first  fa2-v1's forward with the CTAs taking (batch, head) fastest: correct outputs, K/V
//                       re-read from DRAM per query block (what `traffic compare` must flag)
void register_test_versions();

}  // namespace flashsim::gpu
