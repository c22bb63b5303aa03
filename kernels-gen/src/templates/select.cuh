// ---- Compaction in one pass: select, partition, unique, run-length encoding (kernels_gen::select) ----
// (The three-way partition, which needs a count pass first, is below.)
// Each block takes the next tile from the launch state (launch.cuh), as the
// single pass with look-back does, and
//   1. loads its elements striped (item k of thread t is tile element
//      k · Threads + t, so every warp load is contiguous) and asks the
//      source whether each is kept;
//   2. counts the kept ones per (item, warp) with ballots, and warp 0 scans
//      those counts in tile order (item-major, warp-minor: tile order);
//   3. publishes the tile's count and looks back over the preceding tiles'
//      counts (the single pass's decoupled_look_back over 64-bit sums: any
//      n), so that it knows how many elements before it were kept;
//   4. writes each kept element to out[kept before it], and for a
//      partition each rejected one to out[n - 1 - rejected before it]
//      (CUB's DevicePartition::If order: the rejected ones reversed at the
//      end), through shared memory: before the look-back each element goes
//      to its place in the tile compacted there, so that nothing stays in
//      registers across the look-back's call and the writes to the output
//      are contiguous. The last tile writes the count to the caller's slot.
// Input and output are read and written once (unique takes each element's
// predecessor from the neighbouring lane), and nothing is written for
// elements that are not kept, so a selection writes only its first `count`
// elements.
namespace gpu_scan {

// The look-back's operator: counts, summed.
struct select_count_sum {
  typedef unsigned long long T;
  static __device__ __forceinline__ T identity() { return 0ull; }
  static __device__ __forceinline__ T combine(T a, T b) { return a + b; }
};

// Run-length encoding's look-back operator: the runs started (heads) and
// the position of the last head among them, combined in order.
struct select_runs_pair {
  unsigned long long heads;
  unsigned long long last;
};
struct select_runs_op {
  typedef select_runs_pair T;
  static __device__ __forceinline__ T identity() { return T{0ull, 0ull}; }
  static __device__ __forceinline__ T combine(T a, T b) { return T{a.heads + b.heads, b.heads != 0 ? b.last : a.last}; }
};

// What a pass writes: the kept elements (select), then the rest reversed
// (partition), or the run heads with their runs' lengths (run-length
// encoding: the source's kept elements are the heads).
constexpr int select_mode_select = 0;
constexpr int select_mode_partition = 1;
constexpr int select_mode_runs = 2;

// Sources: where the elements come from and whether each is kept, from
// the element, its index and (where `needs_previous`) the element before
// it, which the kernel hands over from the neighbouring lane.
// By a predicate stage (#[scan_predicate]).
template <class Pred> struct select_by_predicate {
  typedef typename Pred::input_t T;
  static constexpr bool needs_previous = false;
  const T* in;
  __device__ __forceinline__ bool keep(unsigned long long, const T& x, const T&) const { return Pred::apply(x); }
};
// By one flag byte per element (non-zero: kept).
template <class E> struct select_by_flags {
  typedef E T;
  static constexpr bool needs_previous = false;
  const T* in;
  const unsigned char* flags;
  __device__ __forceinline__ bool keep(unsigned long long i, const T&, const T&) const { return flags[i] != 0; }
};
// Sources whose keep() reads one flag byte per element (their flags are
// staged with the tile: select_staged_pass).
template <class Source> struct select_flag_bytes {
  static constexpr bool value = false;
};
template <class E> struct select_flag_bytes<select_by_flags<E>> {
  static constexpr bool value = true;
};

// A three-way partition's: kept by the first predicate (keep), else by
// the second (second).
template <class First, class Second> struct select_by_two_predicates {
  typedef typename First::input_t T;
  static constexpr bool needs_previous = false;
  const T* in;
  __device__ __forceinline__ bool keep(unsigned long long, const T& x, const T&) const { return First::apply(x); }
  __device__ __forceinline__ bool second(const T& x) const { return Second::apply(x); }
};
// The first of each run of equal neighbours (#[scan_equality]).
template <class Eq> struct select_run_heads {
  typedef typename Eq::input_t T;
  static constexpr bool needs_previous = true;
  const T* in;
  __device__ __forceinline__ bool keep(unsigned long long i, const T& x, const T& previous) const {
    return i == 0 || !Eq::apply(previous, x);
  }
};

// Loads a tile's items (striped) and returns which are kept (bit k: item
// k). A full tile issues every load before it uses any, so that they are
// in flight together; a partial one guards each. For sources that need the
// element before each, `ends` (Items · warps + 1 slots) receives the
// element before the tile and each warp's lane 31 items: lane 0's
// predecessor for item k of warp w is entry k · warps + w (the previous
// warp's lane 31, the last warp's item k - 1, or the element before the
// tile), which the whole warp reads at once, without a branch.
template <class Source, bool Full, int Threads, int Items, class T = typename Source::T>
__device__ __forceinline__ unsigned select_load(const Source& source, unsigned long long base, int valid, T (&items)[Items], T* ends) {
  constexpr int warps = Threads / 32;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  // The element before the tile, loaded with the tile's (loaded after
  // them, its latency came on top of theirs in every tile).
  if constexpr (Source::needs_previous) {
    if (threadIdx.x == 0 && base > 0) ends[0] = source.in[base - 1];
  }
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    if (Full || position < valid) items[k] = source.in[base + position];
  }
  if constexpr (Source::needs_previous) {
    if (lane == 31) {
#pragma unroll
      for (int k = 0; k < Items; ++k) ends[1 + k * warps + warp] = items[k];
    }
    __syncthreads();
  }
  unsigned kept = 0;
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    T previous = items[k];
    if constexpr (Source::needs_previous) {
      const T up = scan_shfl_up(items[k], 1);
      const T end = ends[k * warps + warp];
      previous = lane == 0 ? end : up;
    }
    const bool keep = (Full || position < valid) && source.keep(base + position, items[k], previous);
    kept |= (unsigned)keep << k;
  }
  return kept;
}

// Warp 0's scan of a tile's per-(item, warp) counts, `entries` of them in
// tile order: each becomes the count before it; returns the total. Lane l
// scans the entries [l · per_lane, (l + 1) · per_lane). The counts may pack
// two 16-bit fields (a three-way partition's): a tile's totals stay below
// 2^16, so neither carries into the other.
template <int Entries>
__device__ __forceinline__ unsigned select_scan_entries(unsigned* entries, unsigned lane) {
  constexpr int per_lane = (Entries + 31) / 32;
  unsigned local[per_lane];
  unsigned sum = 0;
#pragma unroll
  for (int j = 0; j < per_lane; ++j) {
    const int e = (int)lane * per_lane + j;
    local[j] = e < Entries ? entries[e] : 0u;
    sum += local[j];
  }
  unsigned long long warp_total;
  unsigned long long before = warp_exclusive_scan<select_count_sum>((unsigned long long)sum, warp_total);
#pragma unroll
  for (int j = 0; j < per_lane; ++j) {
    const int e = (int)lane * per_lane + j;
    if (e < Entries) entries[e] = (unsigned)before;
    before += local[j];
  }
  return (unsigned)warp_total;
}

// The kernel body, for a select_mode_*; `lengths` only for runs. The tile
// status holds a count (16-byte entries), or for runs a select_runs_pair
// (StatusBytes, StatusStride: kernels_gen::tile_status_bytes and _stride).
template <class Source, int Mode, int Threads, int Items, int StatusBytes, int StatusStride, class T = typename Source::T>
__device__ __forceinline__ void select_single_pass(const Source source, T* out, unsigned long long* lengths, unsigned long long* count,
                                                   void* status, scan_launch_state* launch, unsigned long long n) {
  constexpr bool Partition = Mode == select_mode_partition;
  constexpr bool Runs = Mode == select_mode_runs;
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  // Per (item, warp): kept elements, then (after warp 0's scan) kept before.
  __shared__ unsigned kept_before[Items * warps];
  // The tile compacted: kept elements from the front in order, with a
  // partition the rejected ones from the back in order (so that the
  // writes below are contiguous).
  __shared__ T compacted[tile_items];
  // The element before the tile and each warp's lane 31 items (sources
  // that need the element before each: select_load).
  __shared__ T ends[Source::needs_previous ? Items * warps + 1 : 1];
  // With runs, the heads' positions in the tile, in order.
  __shared__ unsigned short positions[Runs ? tile_items : 1];
  __shared__ unsigned long long shared_prefix;
  __shared__ unsigned long long shared_last;  // runs: the last head before the tile
  __shared__ unsigned shared_kept;
  const unsigned long long tiles = (n + tile_items - 1) / tile_items;
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long base = tile * (unsigned long long)tile_items;
  const int valid = (int)(n - base < (unsigned long long)tile_items ? n - base : (unsigned long long)tile_items);
  T items[Items];
  // Bit k: item k is kept.
  const unsigned kept = valid == tile_items ? select_load<Source, true, Threads, Items>(source, base, valid, items, ends)
                                            : select_load<Source, false, Threads, Items>(source, base, valid, items, ends);
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const unsigned ballot = __ballot_sync(0xffffffffu, (kept >> k) & 1u);
    if (lane == 0) kept_before[k * warps + warp] = __popc(ballot);
  }
  __syncthreads();
  if (warp == 0) {
    const unsigned total = select_scan_entries<Items * warps>(kept_before, lane);
    if (lane == 0) shared_kept = total;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    const unsigned ballot = __ballot_sync(0xffffffffu, (kept >> k) & 1u);
    const int kept_earlier = (int)(kept_before[k * warps + warp] + __popc(ballot & ((1u << lane) - 1u)));
    if ((kept >> k) & 1u) {
      compacted[kept_earlier] = items[k];
      if constexpr (Runs) positions[kept_earlier] = (unsigned short)position;
    } else if (Partition && position < valid) {
      compacted[tile_items - 1 - (position - kept_earlier)] = items[k];
    }
  }
  // Warp 0 publishes the tile's count and looks back for the counts
  // before it; no element is held in registers across the look-back.
  const unsigned tile_kept = shared_kept;
  if constexpr (Runs) {
    __syncthreads();  // the positions, for the tile's last head
    if (warp == 0) {
      scan_tile_status<select_runs_pair, StatusBytes, StatusStride> tile_status(status);
      const unsigned epoch = scan_shared_epoch;
      const select_runs_pair own{tile_kept, tile_kept != 0 ? base + positions[tile_kept - 1] : 0ull};
      if (lane == 0) tile_status.publish(tile, (epoch << 2) | (tile == 0 ? scan_tile_prefix : scan_tile_aggregate), own);
      select_runs_pair before = select_runs_op::identity();
      if (tile != 0) {
        before = decoupled_look_back<select_runs_op>(tile, tile_status, epoch);
        if (lane == 0) tile_status.publish(tile, (epoch << 2) | scan_tile_prefix, select_runs_op::combine(before, own));
      }
      if (lane == 0) {
        shared_prefix = before.heads;
        shared_last = before.last;
        if (tile == tiles - 1) {
          // The last run ends at n; the count of runs.
          const select_runs_pair all = select_runs_op::combine(before, own);
          lengths[all.heads - 1] = n - all.last;
          *count = all.heads;
        }
      }
    }
  } else if (warp == 0) {
    scan_tile_status<unsigned long long, 16, StatusStride> tile_status(status);
    const unsigned epoch = scan_shared_epoch;
    if (lane == 0) tile_status.publish(tile, (epoch << 2) | (tile == 0 ? scan_tile_prefix : scan_tile_aggregate), tile_kept);
    unsigned long long before = 0;
    if (tile != 0) {
      before = decoupled_look_back<select_count_sum>(tile, tile_status, epoch);
      if (lane == 0) tile_status.publish(tile, (epoch << 2) | scan_tile_prefix, before + tile_kept);
    }
    if (lane == 0) {
      shared_prefix = before;
      if (tile == tiles - 1) *count = before + tile_kept;
    }
  }
  __syncthreads();
  const unsigned long long prefix = shared_prefix;
  for (int j = (int)threadIdx.x; j < (int)tile_kept; j += Threads) {
    out[prefix + j] = compacted[j];
    if constexpr (Runs) {
      // Each head ends the run before it: that run's length.
      if (prefix + j > 0) {
        const unsigned long long previous = j > 0 ? base + positions[j - 1] : shared_last;
        lengths[prefix + j - 1] = base + positions[j] - previous;
      }
    }
  }
  if constexpr (Partition) {
    // The q-th rejected element of the tile goes to n - 1 - (rejected before the tile) - q.
    const unsigned long long last = n - 1 - (base - prefix);
    for (int q = (int)threadIdx.x; q < valid - (int)tile_kept; q += Threads) out[last - q] = compacted[tile_items - 1 - q];
  }
  // Inline, as in the column scans (out of line, its call made ptxas spill).
  if (tile == 0) scan_launch_sweep<StatusBytes, StatusStride>(status, launch, scan_shared_epoch, (int)threadIdx.x, Threads, tiles);
}

// Copies `count` 16-byte chunks (or 4-byte words) from global to shared
// memory, chunk c by thread c mod Threads: asynchronously (cp.async, sm_80
// and newer, no registers held), else through registers, every load
// issued before any store. select_stage_wait waits for them.
template <int Bytes> struct select_chunk {
  typedef unsigned type;
};
template <> struct select_chunk<16> {
  typedef uint4 type;
};
template <int Threads, int Per, int Bytes>
__device__ __forceinline__ void select_copy_chunks(unsigned char* to, const unsigned char* from, int count) {
  static_assert(Bytes == 16 || Bytes == 4, "cp.async copies 4 or 16 bytes");
  typedef typename select_chunk<Bytes>::type Chunk;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#pragma unroll
  for (int r = 0; r < Per; ++r) {
    const int c = r * Threads + (int)threadIdx.x;
    if (c < count) {
      if constexpr (Bytes == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"((unsigned)__cvta_generic_to_shared(to + 16 * c)), "l"(from + 16 * c) : "memory");
      } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" : : "r"((unsigned)__cvta_generic_to_shared(to + 4 * c)), "l"(from + 4 * c) : "memory");
      }
    }
  }
#else
  Chunk chunks[Per];
#pragma unroll
  for (int r = 0; r < Per; ++r) {
    const int c = r * Threads + (int)threadIdx.x;
    if (c < count) chunks[r] = reinterpret_cast<const Chunk*>(from)[c];
  }
#pragma unroll
  for (int r = 0; r < Per; ++r) {
    const int c = r * Threads + (int)threadIdx.x;
    if (c < count) reinterpret_cast<Chunk*>(to)[c] = chunks[r];
  }
#endif
}
__device__ __forceinline__ void select_stage_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" : : : "memory");
#endif
  __syncthreads();
}

// Stages `valid` elements from `from` in `to` (16-byte aligned, room for
// Threads · Items elements): a full tile at a 16-byte aligned address in
// 16-byte chunks, other elements of whole words in words, the rest element
// by element. The caller waits (select_stage_wait).
template <int Threads, int Items, class T>
__device__ __forceinline__ void select_stage_elements(T* to, const T* from, int valid) {
  constexpr int tile_bytes = Threads * Items * (int)sizeof(T);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(from);
  unsigned char* into = reinterpret_cast<unsigned char*>(to);
  if constexpr (tile_bytes % 16 == 0) {
    if (valid == Threads * Items && ((unsigned long long)bytes & 15ull) == 0) {
      select_copy_chunks<Threads, (tile_bytes / 16 + Threads - 1) / Threads, 16>(into, bytes, tile_bytes / 16);
      return;
    }
  }
  if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    select_copy_chunks<Threads, (tile_bytes / 4 + Threads - 1) / Threads, 4>(into, bytes, valid * (int)(sizeof(T) / 4));
  } else {
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int p = k * Threads + (int)threadIdx.x;
      if (p < valid) to[p] = from[p];
    }
  }
}

// Select and the two-way partition in one pass, the tile staged: each
// block copies its tile (and its flags) into shared memory without holding
// it in registers (cp.async), classifies its items there (item k of thread
// t is tile element k · Threads + t), counts the kept ones per (item, warp)
// with ballots, and warp 0 scans the counts in tile order, publishes the
// tile's count and looks back; then each item is written from shared
// memory straight to its place (the kept ones of one warp's item are
// consecutive in the output, so each such write is contiguous). A thread
// holds one bit an item, so registers do not bound the blocks an SM
// holds, only the staged tile does. (select_single_pass does the same with
// the items in registers and the tile compacted in shared memory; it
// serves run-length encoding, which needs the heads' positions in order.)
template <class Source, int Mode, int Threads, int Items, int StatusBytes, int StatusStride, class T = typename Source::T>
__device__ __forceinline__ void select_staged_pass(const Source source, T* out, unsigned long long* count, void* status,
                                                   scan_launch_state* launch, unsigned long long n) {
  static_assert(Mode == select_mode_select || Mode == select_mode_partition, "select or partition");
  static_assert(!Source::needs_previous, "sources of single elements");
  constexpr bool Partition = Mode == select_mode_partition;
  constexpr bool Flags = select_flag_bytes<Source>::value;
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  __shared__ __align__(16) T staged[tile_items];
  __shared__ __align__(16) unsigned char staged_flags[Flags ? tile_items : 16];
  // Per (item, warp): kept elements, then (after warp 0's scan) kept before.
  __shared__ unsigned kept_before[Items * warps];
  __shared__ unsigned long long shared_prefix;
  const unsigned long long tiles = (n + tile_items - 1) / tile_items;
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long base = tile * (unsigned long long)tile_items;
  const int valid = (int)(n - base < (unsigned long long)tile_items ? n - base : (unsigned long long)tile_items);
  if constexpr (Flags) {
    const unsigned char* flags = source.flags + base;
    if (valid == tile_items && tile_items % 16 == 0 && ((unsigned long long)flags & 15ull) == 0) {
      select_copy_chunks<Threads, (tile_items / 16 + Threads - 1) / Threads, 16>(staged_flags, flags, tile_items / 16);
    } else {
#pragma unroll
      for (int k = 0; k < Items; ++k) {
        const int p = k * Threads + (int)threadIdx.x;
        if (p < valid) staged_flags[p] = flags[p];
      }
    }
  }
  select_stage_elements<Threads, Items>(staged, source.in + base, valid);
  select_stage_wait();
  // Bit k: item k is kept.
  unsigned kept = 0;
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int p = k * Threads + (int)threadIdx.x;
    bool keep = false;
    if (p < valid) {
      if constexpr (Flags) {
        keep = staged_flags[p] != 0;
      } else {
        const T x = staged[p];
        keep = source.keep(base + p, x, x);
      }
    }
    kept |= (unsigned)keep << k;
    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) kept_before[k * warps + warp] = __popc(ballot);
  }
  __syncthreads();
  // Warp 0 scans the counts, publishes the tile's and looks back for the
  // counts before it.
  if (warp == 0) {
    const unsigned tile_kept = select_scan_entries<Items * warps>(kept_before, lane);
    scan_tile_status<unsigned long long, 16, StatusStride> tile_status(status);
    const unsigned epoch = scan_shared_epoch;
    if (lane == 0) tile_status.publish(tile, (epoch << 2) | (tile == 0 ? scan_tile_prefix : scan_tile_aggregate), tile_kept);
    unsigned long long before = 0;
    if (tile != 0) {
      before = decoupled_look_back<select_count_sum>(tile, tile_status, epoch);
      if (lane == 0) tile_status.publish(tile, (epoch << 2) | scan_tile_prefix, before + tile_kept);
    }
    if (lane == 0) {
      shared_prefix = before;
      if (tile == tiles - 1) *count = before + tile_kept;
    }
  }
  __syncthreads();
  const unsigned long long prefix = shared_prefix;
  // The rejected elements before the tile's q-th go to n - 1 - (base - prefix) - q.
  const unsigned long long last = n - 1 - (base - prefix);
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int p = k * Threads + (int)threadIdx.x;
    const bool keep = (kept >> k) & 1u;
    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
    const int kept_earlier = (int)(kept_before[k * warps + warp] + __popc(ballot & ((1u << lane) - 1u)));
    if (keep) {
      out[prefix + kept_earlier] = staged[p];
    } else if (Partition && p < valid) {
      out[last - (p - kept_earlier)] = staged[p];
    }
  }
  if (tile == 0) scan_launch_sweep<StatusBytes, StatusStride>(status, launch, scan_shared_epoch, (int)threadIdx.x, Threads, tiles);
}

// Reduce-by-key's look-back operator: the runs started (heads) and the
// combination of the values since the last head (the open run's partial
// total), combined in order.
template <class Op> struct select_keyed_pair {
  unsigned long long heads;
  typename Op::T value;
};
template <class Op> struct select_keyed_op {
  typedef select_keyed_pair<Op> T;
  static __device__ __forceinline__ T identity() { return T{0ull, Op::identity()}; }
  static __device__ __forceinline__ T combine(const T& a, const T& b) {
    return T{a.heads + b.heads, b.heads != 0 ? b.value : Op::combine(a.value, b.value)};
  }
};

// Warp 0's part of a tile's scan of pairs: the warps' inclusive pairs in
// `warp_prefix` become the pairs before each warp, the tile's total is
// published and the tiles' before it looked back over (into `*prefix`,
// lane 0); returns the pairs up to the tile's end.
template <class PairOp, int Warps, int StatusBytes, int StatusStride, class Pair = typename PairOp::T>
__device__ __forceinline__ Pair select_tile_pairs(Pair* warp_prefix, Pair* prefix, unsigned long long tile, void* status, unsigned lane) {
  const Pair w = lane < (unsigned)Warps ? warp_prefix[lane] : PairOp::identity();
  const Pair w_inclusive = warp_inclusive_scan<PairOp>(w);
  const Pair w_earlier = scan_shfl_up(w_inclusive, 1);
  const Pair total = scan_shfl_idx(w_inclusive, Warps - 1);
  if (lane < (unsigned)Warps) warp_prefix[lane] = lane == 0 ? PairOp::identity() : w_earlier;
  scan_tile_status<Pair, StatusBytes, StatusStride> tile_status(status);
  const unsigned epoch = scan_shared_epoch;
  if (lane == 0) tile_status.publish(tile, (epoch << 2) | (tile == 0 ? scan_tile_prefix : scan_tile_aggregate), total);
  Pair before = PairOp::identity();
  if (tile != 0) {
    before = decoupled_look_back<PairOp>(tile, tile_status, epoch);
    if (lane == 0) tile_status.publish(tile, (epoch << 2) | scan_tile_prefix, PairOp::combine(before, total));
  }
  if (lane == 0) *prefix = before;
  return PairOp::combine(before, total);
}

// Which of a thread's Items consecutive elements of a staged tile start
// runs: bit j for element first + j, and bit Items for the element after
// its last (the next tile's first, or past the input's end, which counts
// as a head), so that bit j + 1 says whether element first + j ends a run.
// `keys` holds the element before the tile at [0], element p at [1 + p],
// and the one after the tile at [1 + Threads · Items] when there is one;
// each key is read once, the one before carried in a register.
template <class Source, int Items, class K>
__device__ __forceinline__ unsigned select_thread_heads(const Source& source, const K* keys, unsigned long long base, int first,
                                                        int valid, unsigned long long n) {
  static_assert(Items < 32, "a head bit per item and one after");
  unsigned heads = 0;
  K previous = keys[first];
#pragma unroll
  for (int j = 0; j <= Items; ++j) {
    const int p = first + j;
    if (p < valid || (p == valid && base + p < n)) {
      const K key = keys[1 + p];
      heads |= (unsigned)source.keep(base + p, key, previous) << j;
      previous = key;
    }
  }
  if (first < valid && first + Items >= valid && base + valid == n) heads |= 1u << (valid - first);
  return heads;
}

// Reduce-by-key in one pass: for each run of keys the source's equality
// calls equal, its first key to keys_out and the combination of its
// values, in order, to values_out (run r at index r); the number of runs to
// `count`. A tile is staged in shared memory in input order (striped
// loads); each thread then walks Items consecutive elements once to find
// which start runs (bit j of `heads`: element first + j; bit Items: the
// element after its last, so that bit j + 1 says whether element j ends a
// run), each key read once, and reduces its values to a (heads, partial)
// pair; the block scans those pairs in order, looks back over the tiles'
// pairs, and each thread walks its values again from its exclusive pair,
// writing a run's key at its head and its total at its end. The key after
// the tile comes with the tile, to find the ends. (The first form
// evaluated the equality four times an element and read the tile from
// shared memory eleven times: 0.77x CUB.)
template <class Source, class Op, int Threads, int Items, int StatusBytes, int StatusStride, class K = typename Source::T,
          class V = typename Op::T>
__device__ __forceinline__ void select_reduce_by_key(const Source source, const V* values, K* keys_out, V* values_out,
                                                     unsigned long long* count, void* status, scan_launch_state* launch,
                                                     unsigned long long n) {
  typedef select_keyed_op<Op> PairOp;
  typedef typename PairOp::T Pair;
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  __shared__ K keys[tile_items + 2];  // [0]: the key before the tile; [1 + p]: element p; then the key after
  __shared__ V vals[tile_items];
  __shared__ Pair warp_prefix[warps];
  __shared__ Pair shared_prefix;
  const unsigned long long tiles = (n + tile_items - 1) / tile_items;
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long base = tile * (unsigned long long)tile_items;
  const int valid = (int)(n - base < (unsigned long long)tile_items ? n - base : (unsigned long long)tile_items);
  if (threadIdx.x == 0) {
    if (base > 0) keys[0] = source.in[base - 1];
    if (base + tile_items < n) keys[1 + tile_items] = source.in[base + tile_items];
  }
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    if (position < valid) {
      keys[1 + position] = source.in[base + position];
      vals[position] = values[base + position];
    }
  }
  __syncthreads();
  const int first = (int)threadIdx.x * Items;
  const unsigned heads = select_thread_heads<Source, Items>(source, keys, base, first, valid, n);
  // This thread's elements reduced to a pair, scanned across the warp.
  Pair own = PairOp::identity();
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int p = first + j;
    if (p < valid) own = PairOp::combine(own, Pair{(heads >> j) & 1u, vals[p]});
  }
  const Pair inclusive = warp_inclusive_scan<PairOp>(own);
  const Pair earlier = scan_shfl_up(inclusive, 1);
  if (lane == 31) warp_prefix[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const Pair all = select_tile_pairs<PairOp, warps, StatusBytes, StatusStride>(warp_prefix, &shared_prefix, tile, status, lane);
    if (lane == 0 && tile == tiles - 1) *count = all.heads;
  }
  __syncthreads();
  Pair running = PairOp::combine(shared_prefix, warp_prefix[warp]);
  if (lane != 0) running = PairOp::combine(running, earlier);
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int p = first + j;
    if (p < valid) {
      const bool starts = (heads >> j) & 1u;
      running = PairOp::combine(running, Pair{starts ? 1ull : 0ull, vals[p]});
      if (starts) keys_out[running.heads - 1] = keys[1 + p];
      if ((heads >> (j + 1)) & 1u) values_out[running.heads - 1] = running.value;
    }
  }
  if (tile == 0) scan_launch_sweep<StatusBytes, StatusStride>(status, launch, scan_shared_epoch, (int)threadIdx.x, Threads, tiles);
}

// Non-trivial runs' look-back pair: the runs of two or more started, and
// the position of the last run head (of any run) among them, ~0 for none;
// combined in order.
struct select_nontrivial_pair {
  unsigned long long kept;
  unsigned long long last;
};
struct select_nontrivial_op {
  typedef select_nontrivial_pair T;
  static __device__ __forceinline__ T identity() { return T{0ull, ~0ull}; }
  static __device__ __forceinline__ T combine(T a, T b) { return T{a.kept + b.kept, b.last != ~0ull ? b.last : a.last}; }
};

// The runs of two or more neighbours the source's equality calls equal, in
// one pass (CUB's DeviceRunLengthEncode::NonTrivialRuns): run r's offset
// and length at index r, their number to `count`. A run is kept when its
// head's next element is in it; its length is written at its end (the
// element before the next head, or the input's last) from the position of
// the last head, which the look-back carries across tiles. The tile is
// staged in shared memory with the elements before and after it; each
// thread finds which of its Items consecutive elements start runs once
// (select_thread_heads) and walks them again after the look-back, as in
// select_reduce_by_key.
template <class Source, int Threads, int Items, int StatusBytes, int StatusStride, class T = typename Source::T>
__device__ __forceinline__ void select_non_trivial_runs(const Source source, unsigned long long* offsets,
                                                        unsigned long long* lengths, unsigned long long* count,
                                                        void* status, scan_launch_state* launch, unsigned long long n) {
  typedef select_nontrivial_op PairOp;
  typedef PairOp::T Pair;
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  __shared__ T keys[tile_items + 2];  // [0]: the element before the tile; [1 + p]: element p; then the one after
  __shared__ Pair warp_prefix[warps];
  __shared__ Pair shared_prefix;
  const unsigned long long tiles = (n + tile_items - 1) / tile_items;
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long base = tile * (unsigned long long)tile_items;
  const int valid = (int)(n - base < (unsigned long long)tile_items ? n - base : (unsigned long long)tile_items);
  if (threadIdx.x == 0) {
    if (base > 0) keys[0] = source.in[base - 1];
    if (base + tile_items < n) keys[1 + tile_items] = source.in[base + tile_items];
  }
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    if (position < valid) keys[1 + position] = source.in[base + position];
  }
  __syncthreads();
  const int first = (int)threadIdx.x * Items;
  // Bit j: element first + j starts a run; bit j + 1: it ends one.
  const unsigned heads = select_thread_heads<Source, Items>(source, keys, base, first, valid, n);
  Pair own = PairOp::identity();
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int p = first + j;
    if (p < valid && ((heads >> j) & 1u)) own = PairOp::combine(own, Pair{(heads >> (j + 1)) & 1u ? 0ull : 1ull, base + p});
  }
  const Pair inclusive = warp_inclusive_scan<PairOp>(own);
  const Pair earlier = scan_shfl_up(inclusive, 1);
  if (lane == 31) warp_prefix[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const Pair all = select_tile_pairs<PairOp, warps, StatusBytes, StatusStride>(warp_prefix, &shared_prefix, tile, status, lane);
    if (lane == 0 && tile == tiles - 1) *count = all.kept;
  }
  __syncthreads();
  Pair running = PairOp::combine(shared_prefix, warp_prefix[warp]);
  if (lane != 0) running = PairOp::combine(running, earlier);
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int p = first + j;
    if (p < valid) {
      const bool starts = (heads >> j) & 1u, last = (heads >> (j + 1)) & 1u;
      if (starts) {
        running = PairOp::combine(running, Pair{last ? 0ull : 1ull, base + p});
        if (!last) offsets[running.kept - 1] = base + p;
      }
      // A run ending where it did not start has two or more elements: the
      // last kept one.
      if (last && !starts) lengths[running.kept - 1] = base + p + 1 - running.last;
    }
  }
  if (tile == 0) scan_launch_sweep<StatusBytes, StatusStride>(status, launch, scan_shared_epoch, (int)threadIdx.x, Threads, tiles);
}

// ---- Three-way partition: a count pass, then one pass with a look-back ----
// The second part starts where the first ends, which no tile knows before
// the last one has looked back, so a pass before counts both parts
// (select_partition_three_count: atomics of one 64-bit count per block and
// part into the count slots, which the host zeroes first); then each tile
// compacts its three parts in shared memory and writes them at
// counts[0] + (second-part elements before it), and so on, all three in
// input order. Both passes classify with the same translated predicates,
// whose float operations are never contracted (kernels_gen::nvrtc_options),
// so they agree element for element.

// The second predicate's bits for the items the first did not keep (bit
// k: item k), inside the tile's `valid` elements.
template <class Source, bool Full, int Threads, int Items, class T>
__device__ __forceinline__ unsigned select_second_bits(const Source& source, const T (&items)[Items], unsigned first, int valid) {
  unsigned second = 0;
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    const bool in_second = (Full || position < valid) && !((first >> k) & 1u) && source.second(items[k]);
    second |= (unsigned)in_second << k;
  }
  return second;
}

// A tile's elements of the first and second parts, added to `first` and
// `second` (this thread's items; every load issued before any is used).
template <class Source, bool Full, int Threads, int Items, class T = typename Source::T>
__device__ __forceinline__ void select_count_two(const Source& source, unsigned long long base, int valid, unsigned& first,
                                                 unsigned& second) {
  T items[Items];
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    if (Full || position < valid) items[k] = source.in[base + position];
  }
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    if (Full || position < valid) {
      const bool in_first = source.keep(base + position, items[k], items[k]);
      first += in_first;
      second += !in_first && source.second(items[k]);
    }
  }
}

template <class Source, int Threads, int Items, class T = typename Source::T>
__device__ __forceinline__ void select_partition_three_count(const Source source, unsigned long long* counts, unsigned long long n) {
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  __shared__ unsigned long long warp_counts[2][warps];
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long tiles = (n + tile_items - 1) / tile_items;
  const unsigned long long full_tiles = n / tile_items;
  unsigned long long first = 0, second = 0;
  for (unsigned long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const unsigned long long base = tile * (unsigned long long)tile_items;
    // (32-bit counts per tile: a tile holds at most 2^15 items.)
    unsigned tile_first = 0, tile_second = 0;
    if (tile < full_tiles) {
      select_count_two<Source, true, Threads, Items>(source, base, tile_items, tile_first, tile_second);
    } else {
      select_count_two<Source, false, Threads, Items>(source, base, (int)(n - base), tile_first, tile_second);
    }
    first += tile_first;
    second += tile_second;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    first += __shfl_xor_sync(0xffffffffu, first, offset);
    second += __shfl_xor_sync(0xffffffffu, second, offset);
  }
  if (lane == 0) {
    warp_counts[0][warp] = first;
    warp_counts[1][warp] = second;
  }
  __syncthreads();
  if (threadIdx.x < 2) {
    unsigned long long sum = 0;
#pragma unroll
    for (int w = 0; w < warps; ++w) sum += warp_counts[threadIdx.x][w];
    if (sum != 0) atomicAdd(&counts[threadIdx.x], sum);
  }
}

// The look-back's pair: elements of the first and of the second part.
struct select_two_counts {
  unsigned long long first;
  unsigned long long second;
};
struct select_two_counts_sum {
  typedef select_two_counts T;
  static __device__ __forceinline__ T identity() { return T{0ull, 0ull}; }
  static __device__ __forceinline__ T combine(T a, T b) { return T{a.first + b.first, a.second + b.second}; }
};

template <class Source, int Threads, int Items, int StatusBytes, int StatusStride, class T = typename Source::T>
__device__ __forceinline__ void select_partition_three(const Source source, T* out, const unsigned long long* counts, void* status,
                                                       scan_launch_state* launch, unsigned long long n) {
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  static_assert(tile_items < 65536, "a tile's counts in 16-bit fields");
  // Per (item, warp): first-part elements in the low 16 bits, second-part
  // ones in the high, then (after warp 0's scan) those before.
  __shared__ unsigned kept_before[Items * warps];
  // The tile compacted: its first part, its second, its third.
  __shared__ T compacted[tile_items];
  __shared__ select_two_counts shared_prefix;
  __shared__ unsigned shared_kept;
  const unsigned long long tiles = (n + tile_items - 1) / tile_items;
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long base = tile * (unsigned long long)tile_items;
  const int valid = (int)(n - base < (unsigned long long)tile_items ? n - base : (unsigned long long)tile_items);
  T items[Items];
  const unsigned first = valid == tile_items ? select_load<Source, true, Threads, Items>(source, base, valid, items, (T*)nullptr)
                                             : select_load<Source, false, Threads, Items>(source, base, valid, items, (T*)nullptr);
  const unsigned second = valid == tile_items ? select_second_bits<Source, true, Threads, Items>(source, items, first, valid)
                                              : select_second_bits<Source, false, Threads, Items>(source, items, first, valid);
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const unsigned in_first = __ballot_sync(0xffffffffu, (first >> k) & 1u);
    const unsigned in_second = __ballot_sync(0xffffffffu, (second >> k) & 1u);
    if (lane == 0) kept_before[k * warps + warp] = (unsigned)__popc(in_first) | ((unsigned)__popc(in_second) << 16);
  }
  __syncthreads();
  if (warp == 0) {
    const unsigned total = select_scan_entries<Items * warps>(kept_before, lane);
    if (lane == 0) shared_kept = total;
  }
  __syncthreads();
  const unsigned tile_first = shared_kept & 0xffffu;
  const unsigned tile_second = shared_kept >> 16;
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    const int position = k * Threads + (int)threadIdx.x;
    const unsigned earlier_lanes = (1u << lane) - 1u;
    const unsigned in_first = __ballot_sync(0xffffffffu, (first >> k) & 1u);
    const unsigned in_second = __ballot_sync(0xffffffffu, (second >> k) & 1u);
    const unsigned packed = kept_before[k * warps + warp];
    const int first_earlier = (int)((packed & 0xffffu) + __popc(in_first & earlier_lanes));
    const int second_earlier = (int)((packed >> 16) + __popc(in_second & earlier_lanes));
    if ((first >> k) & 1u) {
      compacted[first_earlier] = items[k];
    } else if ((second >> k) & 1u) {
      compacted[tile_first + second_earlier] = items[k];
    } else if (position < valid) {
      compacted[tile_first + tile_second + (position - first_earlier - second_earlier)] = items[k];
    }
  }
  if (warp == 0) {
    scan_tile_status<select_two_counts, StatusBytes, StatusStride> tile_status(status);
    const unsigned epoch = scan_shared_epoch;
    const select_two_counts own{tile_first, tile_second};
    if (lane == 0) tile_status.publish(tile, (epoch << 2) | (tile == 0 ? scan_tile_prefix : scan_tile_aggregate), own);
    select_two_counts before = select_two_counts_sum::identity();
    if (tile != 0) {
      before = decoupled_look_back<select_two_counts_sum>(tile, tile_status, epoch);
      if (lane == 0) tile_status.publish(tile, (epoch << 2) | scan_tile_prefix, select_two_counts_sum::combine(before, own));
    }
    if (lane == 0) shared_prefix = before;
  }
  __syncthreads();
  // Each part's place: the first from 0, the second from counts[0], the
  // third from counts[0] + counts[1], each after the tiles before; element
  // j of the compacted tile goes to its part's pointer + j.
  const unsigned long long first_total = counts[0], second_total = counts[1];
  const unsigned long long first_at = shared_prefix.first;
  const unsigned long long second_at = first_total + shared_prefix.second;
  const unsigned long long third_at = first_total + second_total + (base - shared_prefix.first - shared_prefix.second);
  const int second_from = (int)tile_first, third_from = (int)(tile_first + tile_second);
  // The passes classify alike (the same translated predicates), so every
  // part ends inside its range; a tile that would not stops the kernel
  // rather than write outside the output.
  if (first_at + tile_first > first_total || second_at + tile_second > first_total + second_total ||
      third_at + (unsigned)(valid - third_from) > n)
    __trap();
  T* const first_out = out + first_at;
  T* const second_out = out + second_at - second_from;
  T* const third_out = out + third_at - third_from;
  // (Unrolled over a full tile's items, ptxas spilled before sm_90.)
  for (int j = (int)threadIdx.x; j < valid; j += Threads) {
    T* const part = j < second_from ? first_out : j < third_from ? second_out : third_out;
    part[j] = compacted[j];
  }
  if (tile == 0) scan_launch_sweep<StatusBytes, StatusStride>(status, launch, scan_shared_epoch, (int)threadIdx.x, Threads, tiles);
}

// After a partition, the rejected part out[count, n) is reversed in place,
// so that it keeps input order (Rejected::InOrder): thread j swaps the j-th
// element from each end of it.
template <class T>
__device__ __forceinline__ void select_reverse_tail(T* out, const unsigned long long* count, unsigned long long n) {
  const unsigned long long first = *count;
  const unsigned long long len = n - first;
  for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < len / 2;
       j += (unsigned long long)gridDim.x * blockDim.x) {
    const T a = out[first + j];
    out[first + j] = out[n - 1 - j];
    out[n - 1 - j] = a;
  }
}

}  // namespace gpu_scan
