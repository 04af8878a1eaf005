#pragma once
// The recorded H100 ncu reports of SDPA's FA2 (tests/data/ncu; calibration h100.ncu_replay_write_bytes) and their
// problems, shared by the ncu tests.
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "flashsim/sim/ncu.h"
#include "problem_builder.h"

namespace flashsim::test {

using sim::NcuKernel;

struct RecordedShape {
  // the folder under tests/data/ncu: "" (first run), repeat/, validation/, validation2/
  const char* set;
  const char* name;
  int64_t batch, heads, heads_kv, seqlen, head_dim;
  bool causal;
};

// The recorded H100 shapes (tests/data/ncu; bench/gpu/run.py traffic sdpa measured them): the 7 shapes, the
// same 7 measured again (repeat/), and 5 validation shapes measured after the model was fixed (validation/).
inline constexpr RecordedShape kRecorded[] = {{"", "causal_d128_n4096", 2, 16, 16, 4096, 128, true},
                                              {"", "d64_n1024", 8, 16, 16, 1024, 64, false},
                                              {"", "d256_n1024", 4, 8, 8, 1024, 256, false},
                                              {"", "d128_n16384_causal", 1, 8, 8, 16384, 128, true},
                                              {"", "gqa_d128_n2048", 2, 32, 8, 2048, 128, false},
                                              {"", "d128_n1000", 4, 16, 16, 1000, 128, false},
                                              {"", "d64_n3000_causal", 2, 16, 16, 3000, 64, true}};
inline constexpr RecordedShape kValidation[] = {
    {"validation/", "causal_d128_n8192", 1, 16, 16, 8192, 128, true},
    {"validation/", "gqa_causal_d64_n4096", 2, 16, 4, 4096, 64, true},
    {"validation/", "d96_n2048", 2, 16, 16, 2048, 96, false},
    {"validation/", "d128_n512", 16, 16, 16, 512, 128, false},
    {"validation/", "causal_d256_n2000", 2, 8, 8, 2000, 256, true}};
// Measured on 2026-11-23, after the DRAM floor and the launch latency entered the model.
inline constexpr RecordedShape kValidation2[] = {
    {"validation2/", "causal_d64_n8192", 1, 16, 16, 8192, 64, true},
    {"validation2/", "d128_n2048", 4, 16, 16, 2048, 128, false},
    {"validation2/", "gqa_d64_n2048", 4, 32, 8, 2048, 64, false},
    {"validation2/", "causal_d96_n4096", 2, 8, 8, 4096, 96, true}};

inline std::vector<RecordedShape> all_recorded() {
  std::vector<RecordedShape> out(std::begin(kRecorded), std::end(kRecorded));
  for (RecordedShape s : kRecorded) {
    s.set = "repeat/";
    out.push_back(s);
  }
  out.insert(out.end(), std::begin(kValidation), std::end(kValidation));
  out.insert(out.end(), std::begin(kValidation2), std::end(kValidation2));
  return out;
}

// The problem a recorded shape measured (bf16, bottom-right causal where marked).
inline AttentionProblem recorded_problem(const RecordedShape& s) {
  ProblemBuilder b = ProblemBuilder()
                         .batch(s.batch)
                         .heads(s.heads, s.heads_kv)
                         .seqlen(s.seqlen)
                         .head_dim(s.head_dim)
                         .dtype(DType::BF16);
  if (s.causal) b.causal();
  return b.build();
}

// The problem of the calibration file (ncu_fa2_h100_calibration.csv): a recorded shape like the others.
inline constexpr RecordedShape kCalibration = {"", "calibration_d128_n4096", 2, 16, 16, 4096, 128, false};

inline std::vector<NcuKernel> read_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return sim::parse_ncu_csv(in);
}
// The problem of csv_layouts/ (ncu's CSV pages, bench/gpu/run.py traffic layouts).
inline constexpr RecordedShape kLayoutsShape = {"csv_layouts/", "d64_n1000_causal", 2, 8, 8, 1000, 64, true};

}  // namespace flashsim::test
