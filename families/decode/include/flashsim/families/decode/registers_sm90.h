#pragma once
// Registers a thread of gpu/decode's split kernels as ptxas compiled them for sm_90 (CUDA 13.0.88, the
// release build's flags; fp16 and bf16 the more of the two). `python3 gpu/tools/decode_registers.py BUILD`
// writes this file. The simulator's occupancy of a decode tile reads them: decode-v2's d64 instance, at
// 127, holds four CTAs an SM where the 255 of a generic split-KV tile would hold two.

namespace flashsim::gpu::decode {

struct DecodeRegisters {
  bool tensor_cores;  // decode-v2 (mma.sync); decode-v1 otherwise
  int elem_bytes, d, dv, rows, registers;
};

inline constexpr DecodeRegisters kDecodeRegistersSm90[] = {
    {false, 2, 64, 64, 4, 128},   {false, 2, 64, 64, 8, 168},   {false, 2, 64, 64, 16, 255},
    {false, 2, 128, 64, 4, 138},  {false, 2, 128, 64, 8, 182},  {false, 2, 128, 64, 16, 255},
    {false, 2, 128, 128, 4, 136}, {false, 2, 128, 128, 8, 178}, {false, 2, 128, 128, 16, 255},
    {false, 2, 256, 256, 4, 136}, {false, 2, 256, 256, 8, 176}, {false, 2, 256, 256, 16, 255},
    {false, 4, 64, 64, 4, 138},   {false, 4, 64, 64, 8, 154},   {false, 4, 64, 64, 16, 216},
    {false, 4, 128, 64, 4, 145},  {false, 4, 128, 64, 8, 156},  {false, 4, 128, 64, 16, 216},
    {false, 4, 128, 128, 4, 136}, {false, 4, 128, 128, 8, 152}, {false, 4, 128, 128, 16, 214},
    {false, 4, 256, 256, 4, 132}, {false, 4, 256, 256, 8, 144}, {false, 4, 256, 256, 16, 208},
    {true, 2, 64, 64, 16, 127},   {true, 2, 128, 64, 16, 128},  {true, 2, 128, 128, 16, 165},
    {true, 2, 256, 256, 16, 250},
};

}  // namespace flashsim::gpu::decode
