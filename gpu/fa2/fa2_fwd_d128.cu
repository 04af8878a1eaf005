// fa2-v1's forward kernels of head dim 128: every fa2 instance of d128 (fa2_fwd_launch.cuh), in a
// translation unit of its own so that nvcc compiles the head dims in parallel.
#include "fa2_fwd_launch.cuh"

FLASHSIM_FA2_FWD_HEAD_DIM(128);
