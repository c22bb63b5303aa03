// ---- Segmented scans (chapter 1.3.2 and 1.5) ----
// A head flag marks the first element of a segment; element 0 always starts
// one. Values are combined only within a segment and always in order, so
// the operator never needs to be commutative. Two strategies, chosen by a
// template argument, differ in how a warp stops at a head:
//  * scan_segmented_transform: the operator lifted to (flag, value) pairs,
//      (f1, v1) ⊕ (f2, v2) = (f1 | f2, f2 ? v2 : v1 ∘ v2),
//    associative whenever ∘ is (Fig. 1.9), expanded into a warp routine
//    that shuffles the flags along with the values (Fig. 1.10);
//  * scan_segmented_indexing: each lane finds the lane of its segment's
//    head and only takes partials from lanes at or after it (Fig. 1.11).
// Above the warp both combine per-warp, per-thread and per-tile
// (flag, value) pairs with ⊕, where the flag says "a segment starts in
// here" (Figs. 1.13 and 1.14).
#ifdef GPU_SCAN_SEGMENTED
namespace gpu_scan {

// ---- Segmented, warp level ----
// Lane i returns the combination of the values from its segment's head (or
// lane 0) through lane i; `flag` (lane i's own head flag on entry) becomes
// true when a head lies in lanes 0..i.
template <class Op, int Strategy, class T = typename Op::T>
__device__ __forceinline__ T warp_segmented_inclusive_scan(T value, bool& flag) {
  const unsigned lane = threadIdx.x & 31u;
  if constexpr (Strategy == scan_segmented_transform) {
#pragma unroll
    for (unsigned offset = 1; offset < 32; offset <<= 1) {
      const T earlier = scan_shfl_up(value, offset);
      const bool earlier_flag = __shfl_up_sync(0xffffffffu, (int)flag, offset) != 0;
      if (lane >= offset) {
        // (earlier_flag, earlier) ⊕ (flag, value)
        if (!flag) value = Op::combine(earlier, value);
        flag = flag || earlier_flag;
      }
    }
  } else {
    // The max-scan of head indices: the highest flagged lane at or below
    // this one (lane 0 when there is none). A ballot gives it in one step.
    const unsigned heads_so_far = __ballot_sync(0xffffffffu, flag) & (0xffffffffu >> (31u - lane));
    const unsigned head_lane = heads_so_far != 0 ? 31u - (unsigned)__clz((int)heads_so_far) : 0u;
#pragma unroll
    for (unsigned offset = 1; offset < 32; offset <<= 1) {
      const T earlier = scan_shfl_up(value, offset);
      // Lane i - offset holds a partial of this segment only when it is not
      // before the head; otherwise lane i already holds head..i.
      if (lane >= head_lane + offset) value = Op::combine(earlier, value);
    }
    flag = heads_so_far != 0;
  }
  return value;
}

// ---- Segmented, block level: one (flag, value) pair per thread ----
// Returns thread t's *lifted exclusive prefix*: the combination of the
// values of threads h..t-1, where h is the last flagged thread before t
// (thread 0 if none); `prefix_flag` tells whether such a thread exists.
// Thread 0 gets (identity, false). A thread whose first element is a head
// ignores its prefix; any other puts it in front of its values (a segmented
// exclusive scan gives a head the identity instead of the prefix).
// `block_total`, `block_flag`: all threads' pairs combined with ⊕.
// Shared memory: warp_totals[Shape<Op>::warps], warp_flags[Shape<Op>::warps]. All threads
// must call it, and a second call must follow a __syncthreads().
template <class Op, int Strategy, class T = typename Op::T>
__device__ __forceinline__ T block_segmented_exclusive_scan(T value, bool flag, bool& prefix_flag, T* warp_totals, bool* warp_flags, T& block_total, bool& block_flag) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  bool inclusive_flag = flag;
  const T inclusive = warp_segmented_inclusive_scan<Op, Strategy>(value, inclusive_flag);
  if (lane == 31) {
    warp_totals[warp] = inclusive;
    warp_flags[warp] = inclusive_flag;
  }
  __syncthreads();
  if (warp == 0) {
    // Warp 0 scans the warps' pairs (idle lanes hold (identity, false)), so
    // entry w becomes the pair of warps 0..w.
    bool f = lane < Shape<Op>::warps && warp_flags[lane];
    const T total = lane < Shape<Op>::warps ? warp_totals[lane] : Op::identity();
    const T scanned = warp_segmented_inclusive_scan<Op, Strategy>(total, f);
    if (lane < Shape<Op>::warps) {
      warp_totals[lane] = scanned;
      warp_flags[lane] = f;
    }
  }
  __syncthreads();
  block_total = warp_totals[Shape<Op>::warps - 1];
  block_flag = warp_flags[Shape<Op>::warps - 1];
  // Within the warp, the exclusive prefix is the previous lane's inclusive one.
  T prefix = scan_shfl_up(inclusive, 1);
  const bool previous_flag = __shfl_up_sync(0xffffffffu, (int)inclusive_flag, 1) != 0;
  prefix_flag = lane != 0 && previous_flag;
  if (warp > 0 && !prefix_flag) {
    // No head in this warp before this lane: the segment that is open at
    // the warp's start continues here, so the earlier warps' partial goes
    // in front (lane 0 has nothing of its own warp in front of it).
    const T before = warp_totals[warp - 1];
    prefix = lane == 0 ? before : Op::combine(before, prefix);
    prefix_flag = warp_flags[warp - 1];
  }
  return threadIdx.x == 0 ? Op::identity() : prefix;
}

// ---- Segmented, tile level: `heads` bit i flags items[i] ----
// The head flags of this thread's items in blocked order: bit i for element
// base + t·IPT + i. Items past `valid` have none; element 0 always has one.
// `WholeWords` lets byte flags be read four at a time where aligned.
template <class Op, int Format, bool WholeWords = true, class T = typename Op::T>
__device__ __forceinline__ unsigned load_heads(const void* flags, unsigned long long base, int valid) {
  const int first = (int)threadIdx.x * Shape<Op>::items_per_thread;
  unsigned heads = 0;
  if constexpr (Format == scan_flags_bytes) {
    const unsigned char* bytes = (const unsigned char*)flags + base + first;
    if (WholeWords && Shape<Op>::items_per_thread % 4 == 0 && first + Shape<Op>::items_per_thread <= valid && ((unsigned long long)bytes & 3u) == 0) {
      // Whole aligned words: a quarter of the loads (bytes are little-endian in a word).
#pragma unroll
      for (int w = 0; w < Shape<Op>::items_per_thread / 4; ++w) {
        const unsigned word = ((const unsigned*)bytes)[w];
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          if ((word >> (8 * b)) & 0xffu) heads |= 1u << (4 * w + b);
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < Shape<Op>::items_per_thread; ++i) {
        if (first + i < valid && bytes[i] != 0) heads |= 1u << i;
      }
    }
  } else if (first < valid) {
    // At most 32 bits starting at bit `bit`: one word or the end of one and
    // the start of the next (read only when those bits exist).
    const int count = valid - first < Shape<Op>::items_per_thread ? valid - first : Shape<Op>::items_per_thread;
    const unsigned long long bit = base + first;
    const unsigned* words = (const unsigned*)flags + (bit >> 5);
    const unsigned shift = (unsigned)(bit & 31u);
    unsigned long long window = words[0] >> shift;
    if (shift + count > 32) window |= (unsigned long long)words[1] << (32u - shift);
    heads = (unsigned)(window & ((1ull << count) - 1ull));
  }
  if (base + first == 0) heads |= 1u;
  return heads;
}

// A thread's pair: whether its items hold a head, and the combination of its
// last segment's items (all items when none is a head). With `seeded`, the
// seed goes in front of every head's item.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T thread_segmented_reduce(const T (&items)[Shape<Op>::items_per_thread], unsigned heads, const T seed, bool seeded) {
  T total = (heads & 1u) && seeded ? Op::combine(seed, items[0]) : items[0];
#pragma unroll
  for (int i = 1; i < Shape<Op>::items_per_thread; ++i) {
    if ((heads >> i) & 1u) total = seeded ? Op::combine(seed, items[i]) : items[i];
    else total = Op::combine(total, items[i]);
  }
  return total;
}

// Scans the tile held in `items` in place (Mode: scan_segmented_inclusive,
// _exclusive or _carry, see the prelude). Once the block has combined the
// threads' pairs, every thread calls `tile_prefix(tile_total, tile_flag)`,
// which returns the (seeded) partial of the segment open at the tile's
// start (it may synchronise the block; its result is not used when the
// tile's first element is a head). With `seeded`, every segment starts with
// `seed` (exclusive scans with an initial value); exclusive scans write
// `seed` at heads (the identity when not seeded).
// Returns the tile's pair: its last segment's partial, and in `tile_flag`
// whether a segment starts in the tile.
// `reload(items)` may refill `items` after that, as in tile_scan_with.
template <class Op, int Mode, int Strategy, class TilePrefix, class Reload, class T = typename Op::T>
__device__ __forceinline__ T tile_segmented_scan_with(T (&items)[Shape<Op>::items_per_thread], unsigned heads, const T seed, bool seeded, T* warp_totals, bool* warp_flags, bool& tile_flag, TilePrefix tile_prefix_of, Reload reload) {
  bool prefix_flag;
  T tile_total;
  const T thread_prefix = block_segmented_exclusive_scan<Op, Strategy>(
      thread_segmented_reduce<Op>(items, heads, seed, seeded), heads != 0u, prefix_flag, warp_totals, warp_flags, tile_total, tile_flag);
  const T tile_prefix = tile_prefix_of(tile_total, tile_flag);
  reload(items);
  // The partial in front of this thread's first item.
  T running = threadIdx.x == 0 ? tile_prefix : prefix_flag ? thread_prefix : Op::combine(tile_prefix, thread_prefix);
#pragma unroll
  for (int i = 0; i < Shape<Op>::items_per_thread; ++i) {
    const T item = items[i];
    if ((heads >> i) & 1u) {
      const T start = seeded ? Op::combine(seed, item) : item;
      items[i] = Mode == scan_segmented_inclusive ? start : Mode == scan_segmented_exclusive ? seed : running;
      running = start;
    } else {
      const T next = Op::combine(running, item);
      items[i] = Mode == scan_segmented_inclusive ? next : running;
      running = next;
    }
  }
  return tile_total;
}

// tile_segmented_scan_with a known `tile_prefix`.
template <class Op, int Mode, int Strategy, class T = typename Op::T>
__device__ __forceinline__ T tile_segmented_scan(T (&items)[Shape<Op>::items_per_thread], unsigned heads, const T tile_prefix, const T seed, bool seeded, T* warp_totals, bool* warp_flags, bool& tile_flag) {
  return tile_segmented_scan_with<Op, Mode, Strategy>(items, heads, seed, seeded, warp_totals, warp_flags, tile_flag,
                                                      [&](const T&, bool) { return tile_prefix; }, [](const T (&)[Shape<Op>::items_per_thread]) {});
}

// ---- Segmented, global level: reduce-then-scan with a head flag per tile ----
// 1. reduce_tiles: each tile's pair (does a segment start in it; the seeded
//    partial of its last segment).
// 2. scan_tile_totals: one block turns the pairs into each tile's prefix, the
//    partial of the segment open at its start (the lifted exclusive scan).
// 3. scan_tiles: each tile is scanned with its prefix in front.
// As for plain scans, one tile skips 1 and 2, and input may equal output.

template <class Op, int Strategy, int Format, class T = typename Op::T>
__device__ __forceinline__ void segmented_reduce_tile(const T* input, const void* flags, T* tile_totals, unsigned char* tile_flags, const T seed, int seeded, unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps];
  __shared__ bool warp_flags[Shape<Op>::warps];
  const unsigned long long base = (unsigned long long)blockIdx.x * Shape<Op>::items_per_tile;
  const int valid = (int)(n - base < Shape<Op>::items_per_tile ? n - base : Shape<Op>::items_per_tile);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  const unsigned heads = load_heads<Op, Format>(flags, base, valid);
  bool prefix_flag, tile_flag;
  T tile_total;
  block_segmented_exclusive_scan<Op, Strategy>(thread_segmented_reduce<Op>(items, heads, seed, seeded != 0), heads != 0u,
                                               prefix_flag, warp_totals, warp_flags, tile_total, tile_flag);
  if (threadIdx.x == 0) {
    tile_totals[blockIdx.x] = tile_total;
    tile_flags[blockIdx.x] = tile_flag;
  }
}

// One block walks the tile pairs a chunk at a time, carrying the pair of
// everything before the chunk; tile_totals[k] becomes tile k's prefix.
template <class Op, int Strategy, class T = typename Op::T>
__device__ __forceinline__ void segmented_scan_tile_totals(T* tile_totals, const unsigned char* tile_flags, unsigned long long num_tiles) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps];
  __shared__ bool warp_flags[Shape<Op>::warps];
  // Tile 0 starts with element 0, a head, so its prefix is never read.
  T carry = Op::identity();
  for (unsigned long long base = 0; base < num_tiles; base += Shape<Op>::items_per_tile) {
    const int valid = (int)(num_tiles - base < Shape<Op>::items_per_tile ? num_tiles - base : Shape<Op>::items_per_tile);
    T items[Shape<Op>::items_per_thread];
    load_tile<Op>(tile_totals, base, valid, staging, items);
    // Byte by byte: this pass is one block, and the simpler loop keeps ptxas
    // from spilling the carry for some element types.
    const unsigned heads = load_heads<Op, scan_flags_bytes, false>(tile_flags, base, valid);
    bool chunk_flag;
    const T chunk_total = tile_segmented_scan<Op, scan_segmented_carry, Strategy>(items, heads, carry, carry, false, warp_totals, warp_flags, chunk_flag);
    store_tile<Op>(tile_totals, base, valid, staging, items);
    carry = chunk_flag ? chunk_total : Op::combine(carry, chunk_total);
  }
}

template <class Op, int Mode, int Strategy, int Format, class T = typename Op::T>
__device__ __forceinline__ void segmented_scan_tile(const T* input, const void* flags, T* output, const T* tile_prefixes, const T seed, int seeded, unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps];
  __shared__ bool warp_flags[Shape<Op>::warps];
  const unsigned long long base = (unsigned long long)blockIdx.x * Shape<Op>::items_per_tile;
  const int valid = (int)(n - base < Shape<Op>::items_per_tile ? n - base : Shape<Op>::items_per_tile);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  const unsigned heads = load_heads<Op, Format>(flags, base, valid);
  const T prefix = tile_prefixes != nullptr ? tile_prefixes[blockIdx.x] : seed;
  bool tile_flag;
  tile_segmented_scan<Op, Mode, Strategy>(items, heads, prefix, seed, seeded != 0, warp_totals, warp_flags, tile_flag);
  store_tile<Op>(output, base, valid, staging, items);
}

// ---- Segmented, global level: single pass with decoupled look-back ----
// The plain single pass over (flag, value) pairs. A tile holding a head
// knows its inclusive prefix (its last segment's partial) from its own
// elements, so it publishes it before looking back; a tile whose first
// element is a head needs nothing from before it and skips the look-back.
// Look-backs therefore stop at the nearest tile with a head, and only the
// head-less tiles in between are combined, with the plain operator.
template <class Op, int Mode, int Strategy, int Format, class T = typename Op::T>
__device__ __forceinline__ void segmented_scan_single_pass(const T* input, const void* flags, T* output, void* status, T* aggregates, T* prefixes,
                                                               scan_launch_state* launch, const T seed, int seeded, unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps];
  __shared__ bool warp_flags[Shape<Op>::warps];
  __shared__ T shared_prefix;
  const unsigned long long tile = scan_single_pass_take_tile(launch, (n + Shape<Op>::items_per_tile - 1) / Shape<Op>::items_per_tile);
  if (tile == scan_no_tile) return;
  const unsigned long long base = tile * Shape<Op>::items_per_tile;
  const int valid = (int)(n - base < Shape<Op>::items_per_tile ? n - base : Shape<Op>::items_per_tile);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  const unsigned heads = load_heads<Op, Format>(flags, base, valid);
  // In warp 0: whether the tile's first element (thread 0's first item) is a head.
  const bool first_is_head = (__shfl_sync(0xffffffffu, heads, 0) & 1u) != 0;
  scan_tile_status<T, Shape<Op>::tile_status_bytes> tile_status(status, aggregates, prefixes);
  bool tile_flag;
  tile_segmented_scan_with<Op, Mode, Strategy>(items, heads, seed, seeded != 0, warp_totals, warp_flags, tile_flag,
                                               [&](const T& tile_total, bool has_head) {
                                                 return single_pass_prefix<Op>(tile, tile_total, has_head, tile_total, !first_is_head, Op::identity(),
                                                                               tile_status, &shared_prefix);
                                               },
                                               // The staging buffer still holds the tile.
                                               [&](T (&again)[Shape<Op>::items_per_thread]) { read_items<Op>(staging, valid, again); });
  store_tile<Op>(output, base, valid, staging, items);
  if (tile == 0) scan_single_pass_sweep(status, launch, n, Shape<Op>::items_per_tile);
}

// ---- Segmented, global level: pipelined single pass (sm_90 and newer) ----
// The pipelined single pass (pipelined.cuh) over (flag, value) pairs. Head
// flags given as bits come with a whole tile, in the producer's bulk loads;
// otherwise (bytes, or the tail tile) the reduce squad reads each thread's
// flags from global memory while the tile loads. The reduce squad keeps
// each thread's flags as a 64-bit mask for the rescan. A tile holding a head
// publishes its last segment's partial as a prefix, which the lookahead
// takes in place of everything before it.

// Shared-memory layout: as the plain pass's, plus per stage the tile's head
// bits, the reduce threads' head masks and the flags of their pairs and of
// the warps' pairs.
template <class Op>
struct pipelined_segmented_shared {
  typedef typename Op::T T;
  unsigned char* base;
  static constexpr int stages = Shape<Op>::pipelined_segmented_stages > 1 ? Shape<Op>::pipelined_segmented_stages : 1;
  static constexpr int squad = Shape<Op>::pipelined_squad_threads;
  static constexpr int warps = Shape<Op>::pipelined_squad_warps;
  static constexpr unsigned tile_bytes = Shape<Op>::pipelined_tile_bytes;
  static constexpr unsigned bits_bytes = Shape<Op>::pipelined_flag_bits_bytes;
  static constexpr unsigned bits_at = stages * tile_bytes;  // 16-byte aligned, for bulk loads
  static constexpr unsigned barriers_at = bits_at + stages * bits_bytes;
  static constexpr unsigned indices_at = barriers_at + stages * 6 * 8;
  static constexpr unsigned heads_at = indices_at + stages * 8;
  static constexpr unsigned values_at = scan_round_up(heads_at + stages * squad * 8, 16);
  static constexpr unsigned flags_at = values_at + stages * (squad + warps + 1) * sizeof(T);
  __device__ __forceinline__ T* tile(int s) const { return (T*)(base + s * tile_bytes); }
  __device__ __forceinline__ unsigned* head_bits(int s) const { return (unsigned*)(base + bits_at + s * bits_bytes); }
  __device__ __forceinline__ unsigned long long* barrier(int which, int s) const { return (unsigned long long*)(base + barriers_at) + which * stages + s; }
  __device__ __forceinline__ unsigned long long& tile_index(int s) const { return ((unsigned long long*)(base + indices_at))[s]; }
  __device__ __forceinline__ unsigned long long* heads(int s) const { return (unsigned long long*)(base + heads_at) + s * squad; }
  __device__ __forceinline__ T* lane_totals(int s) const { return (T*)(base + values_at) + s * squad; }
  __device__ __forceinline__ T* warp_totals(int s) const { return (T*)(base + values_at) + stages * squad + s * warps; }
  __device__ __forceinline__ T& prefix(int s) const { return ((T*)(base + values_at) + stages * (squad + warps))[s]; }
  __device__ __forceinline__ bool* lane_flags(int s) const { return (bool*)(base + flags_at) + s * squad; }
  __device__ __forceinline__ bool* warp_flags(int s) const { return (bool*)(base + flags_at) + stages * squad + s * warps; }
  static constexpr unsigned end = flags_at + stages * (squad + warps);
  static_assert(!Shape<Op>::pipelined_segmented_supported || end <= Shape<Op>::pipelined_segmented_shared_bytes,
                "the segmented pipelined layout fits the shared memory the host provides");
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Bits [shift, shift + count) of words[0], words[1], words[2], bit 0 first
// (shift below 32, count at most 64); words past the window are not read.
__device__ __forceinline__ unsigned long long bit_window(const unsigned* words, unsigned shift, int count) {
  const unsigned spanned = (shift + (unsigned)count + 31u) / 32u;
  unsigned long long window = words[0];
  if (spanned > 1) window |= (unsigned long long)words[1] << 32;
  window >>= shift;
  if (spanned > 2) window |= (unsigned long long)words[2] << (64u - shift);
  return count == 64 ? window : window & ((1ull << count) - 1ull);
}

// The head flags of elements base + first … base + first + count - 1 (count
// at most 64), bit i for element base + first + i; element 0 always has one.
template <class Op, int Format, class T = typename Op::T>
__device__ __forceinline__ unsigned long long pipelined_heads(const void* flags, unsigned long long base, int first, int count) {
  unsigned long long heads = 0;
  if (count > 0) {
    const unsigned long long at = base + first;
    if constexpr (Format == scan_flags_bytes) {
      const unsigned char* bytes = (const unsigned char*)flags + at;
      for (int i = 0; i < count; ++i) heads |= (unsigned long long)(bytes[i] != 0) << i;
    } else {
      heads = bit_window((const unsigned*)flags + (at >> 5), (unsigned)(at & 31u), count);
    }
    if (at == 0) heads |= 1ull;
  }
  return heads;
}

// The (flag, value) pair of a thread's items: whether one is a head, and
// the (seeded) partial of its last segment.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T pipelined_thread_segmented_reduce(const T* tile, unsigned long long heads, const T seed, bool seeded) {
  const int first = (int)threadIdx.x * Shape<Op>::pipelined_items_per_thread;
  T total = (heads & 1ull) && seeded ? Op::combine(seed, tile[first]) : tile[first];
#pragma unroll
  for (int i = 1; i < Shape<Op>::pipelined_items_per_thread; ++i) {
    const T item = tile[first + i];
    if ((heads >> i) & 1ull) total = seeded ? Op::combine(seed, item) : item;
    else total = Op::combine(total, item);
  }
  return total;
}

// Lookahead over pairs: as pipelined_lookahead, but a tile that
// published a prefix (it holds a head) replaces what came before it.
template <class Op, int Strategy, class Status, class T = typename Op::T>
__device__ __forceinline__ void pipelined_segmented_lookahead(const Status& status, unsigned epoch, unsigned long long& next, T& running, unsigned long long target) {
  while (next < target) {
    lookahead_round<Op> round(status, epoch, next, target);
    if (round.count == 0) continue;
    T share = Op::identity();
    bool share_flag = false;
#pragma unroll
    for (int r = 0; r < lookahead_per_lane; ++r) {
      status.fetch(round.first + r, round.states[r], r < round.used, round.values[r]);
      if (r < round.used) {
        const bool head = round.states[r] == scan_tile_prefix;
        share = head || r == 0 ? round.values[r] : Op::combine(share, round.values[r]);
        share_flag = share_flag || head;
      }
    }
    const T total = scan_shfl_idx(warp_segmented_inclusive_scan<Op, Strategy>(share, share_flag), 31);
    const bool total_flag = __shfl_sync(0xffffffffu, (int)share_flag, 31) != 0;
    running = total_flag ? total : Op::combine(running, total);
    next += round.count;
  }
}
#endif

// Kernels: (input, flags, output, status, aggregates, prefixes, launch
// state, seed, seeded, n, tiles), launched as the plain
// pipelined kernels with Shape<Op>::pipelined_segmented_shared_bytes
// bytes of dynamic shared memory; the flags 16-byte aligned too.
template <class Op, int Mode, int Strategy, int Format, class T = typename Op::T>
__device__ __forceinline__ void segmented_scan_pipelined(const T* input, const void* flags, T* output, void* status, T* aggregates,
                                                             T* prefixes, scan_launch_state* launch, const T seed, int seeded_flag,
                                                             unsigned long long n, unsigned long long tiles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Shape<Op>::pipelined_segmented_supported) {
    constexpr int stages = Shape<Op>::pipelined_segmented_stages;
    constexpr int squad = Shape<Op>::pipelined_squad_threads;
    constexpr int items = Shape<Op>::pipelined_items_per_thread;
    const pipelined_segmented_shared<Op> shared{scan_dynamic_shared};
    const bool seeded = seeded_flag != 0;
    const int warp = (int)(threadIdx.x >> 5);
    const unsigned lane = threadIdx.x & 31u;
    pipelined_init_barriers<Op>(shared);
    scan_tile_status<T, Shape<Op>::tile_status_bytes> tile_status(status, aggregates, prefixes);
    if (warp < Shape<Op>::pipelined_squad_warps) {
      // Reduce squad: head flags (from the stage, or read while the tile
      // loads), the threads' pairs and their warp-inclusive scans, the warps' pairs, and the
      // tile's pair, published at once.
      for (int k = 0;; ++k) {
        const int s = k % stages;
        const unsigned parity = (unsigned)(k / stages) & 1u;
        scan_mbarrier_wait(shared.barrier(stage_indexed, s), parity);
        const unsigned long long tile = shared.tile_index(s);
        if (tile >= tiles) break;
        const pipelined_extent<Op> extent(tile, n);
        const int first = (int)threadIdx.x * items;
        const bool bits_loaded = Format == scan_flags_bits && extent.valid == Shape<Op>::pipelined_items_per_tile;
        unsigned long long heads =
            bits_loaded ? 0ull : pipelined_heads<Op, Format>(flags, extent.base, first, extent.valid - first < items ? extent.valid - first : items);
        scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
        if (bits_loaded) {
          // A whole tile's head bits arrived with it; element 0 is a head.
          heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), items);
          if (extent.base + (unsigned long long)first == 0ull) heads |= 1ull;
        }
        pipelined_pad_tail<Op>(shared.tile(s), input, extent);  // padding has no heads
        bool lane_flag = heads != 0ull;
        const T lane_total =
            warp_segmented_inclusive_scan<Op, Strategy>(pipelined_thread_segmented_reduce<Op>(shared.tile(s), heads, seed, seeded), lane_flag);
        shared.heads(s)[threadIdx.x] = heads;
        shared.lane_totals(s)[threadIdx.x] = lane_total;
        shared.lane_flags(s)[threadIdx.x] = lane_flag;
        if (lane == 31) {
          shared.warp_totals(s)[warp] = lane_total;
          shared.warp_flags(s)[warp] = lane_flag;
        }
        scan_named_barrier(1, squad);
        if (threadIdx.x == 0) {
          T tile_total = shared.warp_totals(s)[0];
          bool tile_flag = shared.warp_flags(s)[0];
#pragma unroll
          for (int w = 1; w < Shape<Op>::pipelined_squad_warps; ++w) {
            const bool flag = shared.warp_flags(s)[w];
            tile_total = flag ? shared.warp_totals(s)[w] : Op::combine(tile_total, shared.warp_totals(s)[w]);
            tile_flag = tile_flag || flag;
          }
          // A tile holding a head knows the partial open at its end whatever
          // precedes it: it publishes it as a prefix.
          tile_status.publish(tile, (scan_shared_epoch << 2) | (tile_flag ? scan_tile_prefix : scan_tile_aggregate), tile_total);
        }
        scan_mbarrier_arrive(shared.barrier(stage_reduced, s));
      }
    } else if (warp < 2 * Shape<Op>::pipelined_squad_warps) {
      // Rescan squad: the partial open before each thread's first item
      // (the lifted exclusive prefix), then the rescan in place.
      const int t = (int)threadIdx.x - squad;
      const int squad_warp = warp - Shape<Op>::pipelined_squad_warps;
      for (int k = 0;; ++k) {
        const int s = k % stages;
        const unsigned parity = (unsigned)(k / stages) & 1u;
        scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
        const unsigned long long tile = shared.tile_index(s);
        if (tile >= tiles) break;
        scan_mbarrier_wait(shared.barrier(stage_reduced, s), parity);
        const unsigned long long heads = shared.heads(s)[t];
        // This warp's earlier lanes, then (when no head lies there) the
        // earlier warps' pairs in front.
        T before = lane != 0 ? shared.lane_totals(s)[t - 1] : Op::identity();
        bool before_flag = lane != 0 && shared.lane_flags(s)[t - 1];
        if (!before_flag && squad_warp > 0) {
          T warps_before = shared.warp_totals(s)[0];
          bool warps_flag = shared.warp_flags(s)[0];
          for (int w = 1; w < squad_warp; ++w) {
            const bool flag = shared.warp_flags(s)[w];
            warps_before = flag ? shared.warp_totals(s)[w] : Op::combine(warps_before, shared.warp_totals(s)[w]);
            warps_flag = warps_flag || flag;
          }
          before = lane != 0 ? Op::combine(warps_before, before) : warps_before;
          before_flag = warps_flag;
        }
        scan_mbarrier_wait(shared.barrier(stage_prefixed, s), parity);
        T running = before_flag ? before : Op::combine(shared.prefix(s), before);
        T* const tile_items = shared.tile(s);
        const int first = t * items;
#pragma unroll
        for (int i = 0; i < items; ++i) {
          const T item = tile_items[first + i];
          if ((heads >> i) & 1ull) {
            const T start = seeded ? Op::combine(seed, item) : item;
            tile_items[first + i] = Mode == scan_segmented_inclusive ? start : seed;
            running = start;
          } else {
            const T next = Op::combine(running, item);
            tile_items[first + i] = Mode == scan_segmented_inclusive ? next : running;
            running = next;
          }
        }
        const pipelined_extent<Op> extent(tile, n);
        pipelined_store_tail<Op>(tile_items, output, extent, t);
        scan_fence_shared_for_bulk();
        scan_mbarrier_arrive(shared.barrier(stage_rescanned, s));
      }
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps) {
      // Producer, as in the plain pass; a whole tile's head bits (if the
      // flags are bits) come in a second bulk load on the same barrier.
      // Tiles start at multiples of 128 elements: their bits at 16 bytes.
      const auto bits_bytes = [](const pipelined_extent<Op>& extent) {
        return Format == scan_flags_bits && extent.valid == Shape<Op>::pipelined_items_per_tile ? (unsigned)Shape<Op>::pipelined_items_per_tile / 8u : 0u;
      };
      const auto load_bits = [&](int s, const pipelined_extent<Op>& extent, unsigned long long* loaded) {
        scan_bulk_load(shared.head_bits(s), (const unsigned char*)flags + extent.base / 8, bits_bytes(extent), loaded);
      };
      if (lane == 0) pipelined_producer<Op>(shared, input, status, launch, n, tiles, bits_bytes, load_bits);
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps + 1) {
      // Lookahead over pairs. Tile 0 holds a head (element 0), so what
      // precedes it never matters.
      pipelined_lookahead_warp<Op>(shared, tiles, Op::identity(), [&](unsigned long long& next, T& running, unsigned long long tile) {
        pipelined_segmented_lookahead<Op, Strategy>(tile_status, scan_shared_epoch, next, running, tile);
      });
    } else if (lane == 0) {
      // Store (one lane), as in the plain pass.
      pipelined_store_warp<Op>(shared, output, n, tiles);
    }
    return;
  }
#endif
  __trap();  // the host launches this kernel only where it is supported
}

}  // namespace gpu_scan
#endif  // GPU_SCAN_SEGMENTED
