// LRU simulation of L2 over 128-byte lines.
#include "flashsim/sim/l2_sim.h"

#include <algorithm>
#include <array>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flashsim/sim/counts.h"

namespace flashsim::sim {

namespace {

// LRU with an intrusive doubly linked list over a node array and an open-addressing index (linear probing,
// backward-shift deletion): no allocation per access. An entry is one line or, for a row whose bytes are a
// whole number of lines (aligned, always touched together), the row's `weight` lines: fewer lookups, the same
// capacity in lines.
class Lru {
 public:
  Lru(int64_t lines, int64_t dirty_lines)
      : cap_(std::max<int64_t>(1, lines)), dirty_cap_(dirty_lines > 0 ? dirty_lines : INT64_MAX) {
    nodes_.resize(static_cast<size_t>(cap_));
    size_t t = 1;
    while (t < static_cast<size_t>(cap_) * 2) t <<= 1;
    table_.assign(t, -1);
    mask_ = t - 1;
  }
  void touch(uint64_t line, int64_t weight, int kind, int line_bytes, L2Result& r) {
    size_t h = slot(line);
    while (table_[h] >= 0) {
      Node& n = nodes_[static_cast<size_t>(table_[h])];
      if (n.line == line) {
        r.hits += weight;
        const int32_t id = table_[h];
        if (weight > n.weight) {  // a partial chunk at a sequence end, touched whole later
          used_lines_ += weight - n.weight;
          if (n.dirty) dirty_used_ += weight - n.weight;
          n.weight = static_cast<int32_t>(weight);
        }
        to_front(id);
        if (kind != 0) mark_dirty(id, line_bytes, r);
        return;
      }
      h = (h + 1) & mask_;
    }
    r.misses += weight;
    if (kind != 1) r.dram_read += weight * line_bytes;
    bool moved = false;
    while (used_lines_ + weight > cap_ && tail_ >= 0) {
      const int32_t v = tail_;
      const Node& n = nodes_[static_cast<size_t>(v)];
      if (n.dirty) {
        r.dram_write += n.weight * line_bytes;
        dirty_unlink(v);
        dirty_used_ -= n.weight;
      }
      used_lines_ -= n.weight;
      erase_index(n.line);
      unlink(v);
      free_.push_back(v);
      moved = true;
    }
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<int32_t>(used_nodes_++);
    }
    if (moved) {  // the table changed: find the free slot again
      h = slot(line);
      while (table_[h] >= 0) h = (h + 1) & mask_;
    }
    nodes_[static_cast<size_t>(id)] = Node{line, -1, -1, -1, -1, static_cast<int32_t>(weight), false};
    used_lines_ += weight;
    table_[h] = id;
    push_front(id);
    if (kind != 0) mark_dirty(id, line_bytes, r);
  }
  int64_t dirty_lines() const { return dirty_used_; }

 private:
  struct Node {
    uint64_t line;
    int32_t prev, next;    // recency list
    int32_t dprev, dnext;  // dirty lines, most recently written first
    int32_t weight;
    bool dirty;
  };
  // A written line becomes the newest dirty one; beyond the dirty limit the oldest dirty lines are written
  // back and stay, clean (calibration h100.l2_dirty_bytes).
  void mark_dirty(int32_t id, int line_bytes, L2Result& r) {
    Node& n = nodes_[static_cast<size_t>(id)];
    if (n.dirty) {
      if (dhead_ == id) return;
      dirty_unlink(id);
    } else {
      n.dirty = true;
      dirty_used_ += n.weight;
    }
    push_front_to<&Node::dprev, &Node::dnext>(id, dhead_, dtail_);
    while (dirty_used_ > dirty_cap_ && dtail_ >= 0 && dtail_ != id) {
      const int32_t v = dtail_;
      Node& o = nodes_[static_cast<size_t>(v)];
      r.dram_write += o.weight * line_bytes;
      dirty_used_ -= o.weight;
      dirty_unlink(v);
      o.dirty = false;
    }
  }

  size_t slot(uint64_t line) const {
    return static_cast<size_t>((line * 0x9E3779B97F4A7C15ULL) >> 20) & mask_;
  }
  void erase_index(uint64_t line) {
    size_t h = slot(line);
    while (nodes_[static_cast<size_t>(table_[h])].line != line) h = (h + 1) & mask_;
    size_t j = h;
    for (;;) {  // backward-shift deletion
      table_[h] = -1;
      for (;;) {
        j = (j + 1) & mask_;
        if (table_[j] < 0) return;
        const size_t k = slot(nodes_[static_cast<size_t>(table_[j])].line);
        if ((h <= j) ? (h < k && k <= j) : (h < k || k <= j)) continue;
        break;
      }
      table_[h] = table_[j];
      h = j;
    }
  }
  // Takes a node out of one of its two lists: recency (prev/next, head_/tail_) or dirty (dprev/dnext).
  template <int32_t Node::*Prev, int32_t Node::*Next>
  void unlink_from(int32_t id, int32_t& head, int32_t& tail) {
    Node& n = nodes_[static_cast<size_t>(id)];
    if (n.*Prev >= 0)
      nodes_[static_cast<size_t>(n.*Prev)].*Next = n.*Next;
    else
      head = n.*Next;
    if (n.*Next >= 0)
      nodes_[static_cast<size_t>(n.*Next)].*Prev = n.*Prev;
    else
      tail = n.*Prev;
  }
  void unlink(int32_t id) { unlink_from<&Node::prev, &Node::next>(id, head_, tail_); }
  void dirty_unlink(int32_t id) { unlink_from<&Node::dprev, &Node::dnext>(id, dhead_, dtail_); }
  // Puts a node at the front of one of its two lists.
  template <int32_t Node::*Prev, int32_t Node::*Next>
  void push_front_to(int32_t id, int32_t& head, int32_t& tail) {
    Node& n = nodes_[static_cast<size_t>(id)];
    n.*Prev = -1;
    n.*Next = head;
    if (head >= 0) nodes_[static_cast<size_t>(head)].*Prev = id;
    head = id;
    if (tail < 0) tail = id;
  }
  void push_front(int32_t id) { push_front_to<&Node::prev, &Node::next>(id, head_, tail_); }
  void to_front(int32_t id) {
    if (head_ == id) return;
    unlink(id);
    push_front(id);
  }
  int64_t cap_, dirty_cap_, used_lines_ = 0, used_nodes_ = 0, dirty_used_ = 0;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_;
  std::vector<int32_t> table_;
  size_t mask_ = 0;
  int32_t head_ = -1, tail_ = -1, dhead_ = -1, dtail_ = -1;
};

constexpr int64_t kChunkRows = 16;

// The first line of the spill frames' addresses (each tensor has its own 2^44 bytes: walk_schedule)
uint64_t first_frame_line(int lb) {
  return (static_cast<uint64_t>(kNumTensors) << 44) / static_cast<uint64_t>(lb);
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: the L2's address hash stand-in
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The L2 as the H100 and H200 build it (ncu's LTC-fabric counters on fwd_mimic.cu, calibration
// h200.l2_partitioned_adverse): two partitions; a line's home partition by its address; an SM reads through
// its own partition, which keeps a copy of the lines homed in the other one; a miss there asks the home
// partition over the fabric, and only a miss at home reads DRAM. Each partition is set-associative, a set bin
// holding `ways` entries of `quantum` lines (an entry is a chunk of rows touched together, as Lru's): set loads
// spread as those of `ways`-way line sets. A set replaces its least recently used entry (LRU) or, with `srrip`,
// by static re-reference interval prediction: a 2-bit prediction per entry, 2 ("long") when it comes in, 0 when
// it is hit; the victim is the first at 3 ("distant"), all aged by one until one is (a line read once leaves
// before lines read again; the H200's reuse probe, calibration h200.l2_replacement). With `drrip`, dynamic RRIP
// (Jaleel et al., ISCA 2010, with its published constants): SRRIP's victims, but each partition's sets duel. Its
// SRRIP leader sets insert "long", its bimodal ones "distant" but for one insertion in 32; a 10-bit counter
// counts the leaders' misses (an SRRIP leader's up, a bimodal one's down) and the other sets insert as the
// leaders that miss less (a loop larger than the cache keeps part of itself in bimodal sets). Reads only:
// `traffic compare`'s upper bound.
class PartitionedL2 {
 public:
  enum class Policy { Lru, Srrip, Drrip };
  static Policy policy(const std::string& name) {
    return name == "srrip" ? Policy::Srrip : name == "drrip" ? Policy::Drrip : Policy::Lru;
  }
  PartitionedL2(int64_t lines, int partitions, int ways, int64_t quantum, Policy policy)
      : policy_(policy),
        parts_(std::max(1, partitions)),
        sets_(std::max<int64_t>(1, lines / parts_ / (std::max(1, ways) * std::max<int64_t>(1, quantum)))),
        bin_lines_(std::max<int64_t>(1, lines / parts_ / sets_)),
        bins_(static_cast<size_t>(parts_ * sets_)),
        duel_(static_cast<size_t>(parts_)) {}
  // Whether the line (an entry of `weight` lines) was in L2 for an SM of partition `part` (< partitions).
  bool touch(uint64_t line, int64_t weight, int part) {
    const int home = static_cast<int>(mix(line * 31 + 7) % static_cast<uint64_t>(parts_));
    if (part == home) return bin_touch(home, line, weight);
    if (bin_touch(part, line, weight)) return true;  // the near copy
    return bin_touch(home, line, weight);            // over the fabric
  }

 private:
  struct Entry {
    uint64_t line;
    int64_t weight, stamp;
    int rrpv;  // SRRIP's re-reference prediction: 0 near .. 3 distant
  };
  static constexpr int kInsertRrpv = 2, kDistantRrpv = 3;  // SRRIP with 2-bit predictions
  // DRRIP's set dueling: one set in 32 leads for each policy (the paper's 32 of 1024; a partition here has
  // 100s .. 1000s of sets); a 10-bit selector starting at its middle; bimodal insertion "long" once in 32
  static constexpr int64_t kLeaderStride = 32;
  static constexpr int kSelectorMax = 1023, kBimodalLongEvery = 32;
  struct Duel {
    int selector = (kSelectorMax + 1) / 2;  // at or above the middle: the followers insert bimodally
    int64_t bimodal_inserts = 0;
  };
  struct Bin {
    std::vector<Entry> entries;
    int64_t used = 0;
  };
  // The prediction a line missed into set `set` of partition `part` comes in with (SRRIP's, or DRRIP's duel)
  int insert_rrpv(int part, int64_t set) {
    if (policy_ != Policy::Drrip) return kInsertRrpv;
    Duel& d = duel_[static_cast<size_t>(part)];
    const int64_t leader = set % kLeaderStride;  // 0: an SRRIP leader, 1: a bimodal one, else a follower
    if (leader == 0) d.selector = std::min(kSelectorMax, d.selector + 1);  // SRRIP missed
    if (leader == 1) d.selector = std::max(0, d.selector - 1);             // bimodal missed
    const bool bimodal = leader == 1 || (leader != 0 && d.selector > kSelectorMax / 2);
    if (!bimodal) return kInsertRrpv;
    return d.bimodal_inserts++ % kBimodalLongEvery == 0 ? kInsertRrpv : kDistantRrpv;
  }
  bool bin_touch(int part, uint64_t line, int64_t weight) {
    const auto set = static_cast<int64_t>(mix(line) % static_cast<uint64_t>(sets_));
    Bin& b = bins_[static_cast<size_t>(part * sets_ + set)];
    ++clock_;
    for (Entry& e : b.entries)
      if (e.line == line) {
        if (weight > e.weight) {  // a partial chunk at a sequence end, touched whole later
          b.used += weight - e.weight;
          e.weight = weight;
        }
        e.stamp = clock_;
        e.rrpv = 0;
        evict(b, line);
        return true;
      }
    b.entries.push_back(Entry{line, std::min(weight, bin_lines_), clock_, insert_rrpv(part, set)});
    b.used += b.entries.back().weight;
    evict(b, line);
    return false;
  }
  void evict(Bin& b, uint64_t keep) {  // victims until the bin holds its lines
    while (b.used > bin_lines_ && b.entries.size() > 1) {
      const size_t v = policy_ == Policy::Lru ? lru_victim(b, keep) : srrip_victim(b, keep);
      b.used -= b.entries[v].weight;
      b.entries[v] = b.entries.back();
      b.entries.pop_back();
    }
  }
  static size_t lru_victim(const Bin& b, uint64_t keep) {
    size_t v = b.entries.size();
    for (size_t i = 0; i < b.entries.size(); ++i)
      if (b.entries[i].line != keep && (v == b.entries.size() || b.entries[i].stamp < b.entries[v].stamp))
        v = i;
    return v;
  }
  static size_t srrip_victim(Bin& b, uint64_t keep) {
    for (;;) {
      for (size_t i = 0; i < b.entries.size(); ++i)
        if (b.entries[i].line != keep && b.entries[i].rrpv >= kDistantRrpv) return i;
      for (Entry& e : b.entries) ++e.rrpv;  // none distant: all one step older
    }
  }
  Policy policy_;
  int parts_;
  int64_t sets_, bin_lines_;
  std::vector<Bin> bins_;
  std::vector<Duel> duel_;  // a partition's
  int64_t clock_ = 0;
};

// Walks the schedule's moves as the L2 sees them: `resident` slots, each issuing one move per round; a slot
// whose CTA has finished takes the next CTA in launch order (the hardware's block scheduler), so CTAs of unequal
// length drift apart as on the GPU. Slot k runs on SM k mod sms. touch(line, weight, kind, sm) for each line or
// chunk of lines (kind 0 load, 1 store, 2 reduction). `frame_bytes` a CTA (its threads' register-spill stack
// frames): stored when the CTA starts and loaded when it ends (slots spilled before the main loop and reloaded
// after it: calibration h200.spill_frame_reads), at the slot's own local-memory addresses, which the slot's next
// CTA takes over.
template <class Touch>
void walk_schedule(const KernelSchedule& s, const AttentionProblem& p, int lb, int sms, int64_t resident_ctas,
                   int64_t frame_bytes, Touch&& touch) {
  // Each tensor its own address range; rows of a (batch, head) laid out as BSHD with padded sequences.
  int64_t rows = std::max(dq_accum_padded_rows(p.seqlen_q), p.seqlen_k);
  for (const auto& cta : s.ctas)  // the partials dQ strategy stores rows beyond a sequence
    for (const auto& m : cta.moves)
      if (m.addr0 < 0 && !m.zero_fill) rows = std::max(rows, m.row0 + m.rows);
  rows += 128;
  const int64_t heads = std::max(p.heads_q, p.heads_kv);
  const auto n = static_cast<int64_t>(s.ctas.size());
  // A tensor's rows are touched chunk by chunk only when every move of it starts on a chunk (the dense
  // schedules' tiles do; the decode kernels' packed heads and split partials need not) and takes whole rows
  // (MLA's V, the first columns of K's rows, touches lines of them: line by line, as the whole rows then).
  std::array<bool, kNumTensors> chunked;
  chunked.fill(true);
  for (const auto& cta : s.ctas)
    for (const auto& m : cta.moves)
      if (!m.zero_fill && (m.row0 % kChunkRows != 0 || (m.row_elems > 0 && m.row_elems != m.cols)))
        chunked[static_cast<size_t>(m.tensor)] = false;
  const auto touch_move = [&](const Move& m, int sm) {
    const int kind = m.kind == ref::AccessKind::Load ? 0 : m.kind == ref::AccessKind::Store ? 1 : 2;
    const uint64_t row_bytes = static_cast<uint64_t>(m.cols * m.elem_bytes);  // touched a row
    // from one row's start to the next (of the same head)
    const uint64_t row_pitch = static_cast<uint64_t>((m.row_elems > 0 ? m.row_elems : m.cols) * m.elem_bytes);
    const uint64_t base = static_cast<uint64_t>(m.tensor) << 44;
    if (m.addr0 >= 0) {  // a move at its own addresses (the paged cache, the block table): each row's lines
      for (int64_t row = 0; row < m.rows; ++row) {
        const uint64_t a0 = base + static_cast<uint64_t>((m.addr0 + row * m.pitch) * m.elem_bytes);
        const uint64_t first = a0 / static_cast<uint64_t>(lb),
                       last = (a0 + row_bytes - 1) / static_cast<uint64_t>(lb);
        for (uint64_t line = first; line <= last; ++line) touch(line, 1, kind, sm);
      }
      return;
    }
    const bool whole_lines = row_bytes % static_cast<uint64_t>(lb) == 0;  // rows are row_bytes-aligned
    const bool stat = m.cols == 1;  // row statistics (lse, D, m, l) are [batch, head, seq]; the rest BSHD
    // K's and V's rows interleave their own kv heads (a GQA d96 K of one kv head: 192-byte rows back to back, which
    // a stride of the query heads would spread over a line and a half each)
    const bool kv = m.tensor == ref::TensorId::K || m.tensor == ref::TensorId::V;
    const int64_t tensor_heads = kv ? std::max<int64_t>(1, p.heads_kv) : heads;
    const auto addr = [&](int64_t row) {
      return base + static_cast<uint64_t>(stat ? (m.batch * heads + m.head) * rows + row
                                               : (m.batch * rows + row) * tensor_heads + m.head) *
                        row_pitch;
    };
    if (whole_lines && !stat && chunked[static_cast<size_t>(m.tensor)]) {
      // Rows of whole lines in chunks of kChunkRows: every schedule moves tiles whose row ranges start at
      // multiples of the chunk, so a chunk's lines are always touched together (one entry of their weight).
      const int64_t lines_per_row = static_cast<int64_t>(row_bytes) / lb;
      for (int64_t c0 = m.row0 / kChunkRows * kChunkRows; c0 < m.row0 + m.rows; c0 += kChunkRows) {
        const int64_t r0 = std::max(c0, m.row0), r1 = std::min(c0 + kChunkRows, m.row0 + m.rows);
        touch(addr(c0) / static_cast<uint64_t>(lb), (r1 - r0) * lines_per_row, kind, sm);
      }
      return;
    }
    for (int64_t row = m.row0; row < m.row0 + m.rows; ++row) {
      const uint64_t a0 = addr(row);
      const uint64_t first = a0 / static_cast<uint64_t>(lb),
                     last = (a0 + row_bytes - 1) / static_cast<uint64_t>(lb);
      for (uint64_t line = first; line <= last; ++line) touch(line, 1, kind, sm);
    }
  };
  struct Slot {
    int64_t cta;
    size_t pos;
    int sm;
    int64_t id;  // the slot's local memory
  };
  // A slot's frame: whole lines, in chunks of kChunkRows lines, past every tensor's addresses
  const int64_t frame_lines = (std::max<int64_t>(0, frame_bytes) + lb - 1) / lb;
  const uint64_t frame_base = first_frame_line(lb);
  const auto touch_frame = [&](const Slot& sl, int kind) {
    for (int64_t c = 0; c < frame_lines; c += kChunkRows)
      touch(frame_base + static_cast<uint64_t>(sl.id * frame_lines + c),
            std::min(kChunkRows, frame_lines - c), kind, sl.sm);
  };
  std::vector<Slot> slots;
  int64_t next = 0;
  const int64_t group = std::max<int64_t>(1, resident_ctas);
  while (next < n && static_cast<int64_t>(slots.size()) < group) {
    const auto id = static_cast<int64_t>(slots.size());
    slots.push_back({next++, 0, static_cast<int>(id % std::max(1, sms)), id});
    touch_frame(slots.back(), 1);
  }
  while (!slots.empty()) {
    for (size_t i = 0; i < slots.size();) {
      Slot& sl = slots[i];
      const auto& moves = s.ctas[static_cast<size_t>(sl.cta)].moves;
      const auto skip_zero_fill = [&] {  // a box's rows past the tensor: no line (Move::zero_fill)
        while (sl.pos < moves.size() && moves[sl.pos].zero_fill) ++sl.pos;
      };
      skip_zero_fill();
      if (sl.pos < moves.size()) touch_move(moves[sl.pos++], sl.sm);
      skip_zero_fill();
      if (sl.pos >= moves.size()) {
        touch_frame(sl, 0);
        if (next < n) {
          sl = Slot{next++, 0, sl.sm, sl.id};
          touch_frame(sl, 1);
        } else {
          slots[i] = slots.back();
          slots.pop_back();
          continue;
        }
      }
      ++i;
    }
  }
}

}  // namespace

L2Result simulate_l2(const KernelSchedule& s, const AttentionProblem& p, const HardwareProfile& hw,
                     int64_t resident_ctas, int64_t frame_bytes) {
  L2Result r;
  const int lb = hw.line_bytes > 0 ? hw.line_bytes : 128;
  Lru cache(hw.l2_effective_bytes / lb, hw.l2_dirty_bytes / lb);
  const uint64_t frames = first_frame_line(lb);
  walk_schedule(s, p, lb, hw.sms, resident_ctas, frame_bytes,
                [&](uint64_t line, int64_t weight, int kind, int) {
                  const int64_t before = r.dram_read;
                  cache.touch(line, weight, kind, lb, r);
                  if (line >= frames) r.frame_read += r.dram_read - before;
                });
  r.dirty_at_end = cache.dirty_lines() * lb;
  return r;
}

PartitionedReads simulate_l2_partitioned_reads(const KernelSchedule& s, const AttentionProblem& p,
                                               const HardwareProfile& hw, int64_t resident_ctas,
                                               int64_t capacity_bytes, int64_t frame_bytes) {
  const int lb = hw.line_bytes > 0 ? hw.line_bytes : 128;
  // An entry's lines: a chunk of the widest row the schedule moves (a set bin holds `ways` of them)
  int64_t quantum = 1;
  for (const auto& cta : s.ctas)
    for (const auto& m : cta.moves)
      quantum = std::max<int64_t>(quantum, kChunkRows * ((m.cols * m.elem_bytes + lb - 1) / lb));
  const int parts = std::max(1, hw.l2_partitions);
  PartitionedL2 cache(capacity_bytes / lb, parts, hw.l2_ways, quantum,
                      PartitionedL2::policy(hw.l2_replacement));
  const int sms = std::max(1, hw.sms);
  PartitionedReads r;
  const uint64_t frames = first_frame_line(lb);
  walk_schedule(
      s, p, lb, sms, resident_ctas, frame_bytes, [&](uint64_t line, int64_t weight, int kind, int sm) {
        const bool hit = cache.touch(line, weight, sm * parts / sms);  // SMs 0 .. sms/2 - 1 on the first
        if (hit || kind == 1) return;                                  // stores allocate without reading
        r.dram_read += weight * lb;
        if (line >= frames) r.frame_read += weight * lb;
      });
  return r;
}

std::optional<int64_t> simulate_l2_optimal_reads(const KernelSchedule& s, const AttentionProblem& p,
                                                 const HardwareProfile& hw, int64_t resident_ctas,
                                                 int64_t capacity_bytes, int64_t max_reads) {
  const int lb = hw.line_bytes > 0 ? hw.line_bytes : 128;
  // The walk's reads in order: (entry, its lines); a walk longer than max_reads stops at the first read past it
  struct TooLong {};
  std::vector<std::pair<uint64_t, int64_t>> reads;
  try {
    walk_schedule(s, p, lb, std::max(1, hw.sms), resident_ctas, 0,
                  [&](uint64_t line, int64_t weight, int kind, int) {
                    if (kind == 1) return;
                    if (static_cast<int64_t>(reads.size()) >= max_reads) throw TooLong{};
                    reads.emplace_back(line, weight);
                  });
  } catch (const TooLong&) {
    return std::nullopt;
  }
  // next[i]: where reads[i]'s entry is read again (kNever: not again)
  constexpr auto kNever = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> next(reads.size(), kNever);
  {
    std::unordered_map<uint64_t, int64_t> seen;
    seen.reserve(reads.size() / 4 + 16);
    for (auto i = static_cast<int64_t>(reads.size()) - 1; i >= 0; --i) {
      const auto [it, fresh] = seen.try_emplace(reads[static_cast<size_t>(i)].first, i);
      if (!fresh) {
        next[static_cast<size_t>(i)] = it->second;
        it->second = i;
      }
    }
  }
  // The cache: entry -> (its next read, its lines); a max-heap of (next read, entry), stale items skipped
  struct Held {
    int64_t next, weight;
  };
  std::unordered_map<uint64_t, Held> held;
  std::priority_queue<std::pair<int64_t, uint64_t>> furthest;
  const int64_t capacity = capacity_bytes / lb;
  int64_t used = 0, missed = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const auto [line, weight] = reads[i];
    auto it = held.find(line);
    if (it == held.end()) {
      missed += weight;
      it = held.emplace(line, Held{next[i], weight}).first;
      used += weight;
    } else {
      if (weight > it->second.weight) {  // a partial chunk at a sequence end, read whole later
        used += weight - it->second.weight;
        it->second.weight = weight;
      }
      it->second.next = next[i];
    }
    furthest.emplace(next[i], line);
    while (used > capacity && !furthest.empty()) {  // evict the entries read again furthest ahead
      const auto [when, victim] = furthest.top();
      furthest.pop();
      const auto v = held.find(victim);
      if (v == held.end() || v->second.next != when) continue;  // stale
      used -= v->second.weight;
      held.erase(v);
    }
  }
  return missed * lb;
}

double simulate_l2_reuse_probe(const HardwareProfile& hw, int64_t capacity_bytes, int64_t buffer_bytes,
                               int ctas_per_sm) {
  const int lb = hw.line_bytes > 0 ? hw.line_bytes : 128;
  const int parts = std::max(1, hw.l2_partitions), sms = std::max(1, hw.sms);
  const int64_t chunk_lines = kReuseProbeChunkBytes / lb;
  const int64_t chunks = std::max<int64_t>(1, buffer_bytes / kReuseProbeChunkBytes);
  const int64_t grid = chunks * kReuseProbePasses;
  PartitionedL2 cache(capacity_bytes / lb, parts, hw.l2_ways, 1, PartitionedL2::policy(hw.l2_replacement));
  // slot k on SM k mod sms (as walk_schedule), each reading its chunk a line a round
  const int64_t slots = int64_t{sms} * std::max(1, ctas_per_sm);
  std::vector<int64_t> cta(static_cast<size_t>(slots), -1), pos(static_cast<size_t>(slots), 0);
  int64_t next = 0, live = 0, misses = 0;
  for (int64_t k = 0; k < slots && next < grid; ++k, ++live) cta[static_cast<size_t>(k)] = next++;
  while (live > 0)
    for (int64_t k = 0; k < slots; ++k) {
      const auto i = static_cast<size_t>(k);
      if (cta[i] < 0) continue;
      const auto line = static_cast<uint64_t>((cta[i] % chunks) * chunk_lines + pos[i]);
      if (!cache.touch(line, 1, static_cast<int>(k % sms) * parts / sms)) ++misses;
      if (++pos[i] < chunk_lines) continue;
      pos[i] = 0;  // the CTA's chunk read: the slot takes the next CTA
      cta[i] = next < grid ? next++ : -1;
      if (cta[i] < 0) --live;
    }
  const double lines = static_cast<double>(chunks * chunk_lines);
  return (static_cast<double>(misses) - lines) / ((kReuseProbePasses - 1) * lines);
}

}  // namespace flashsim::sim
