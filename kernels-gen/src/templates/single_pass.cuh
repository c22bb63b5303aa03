// ---- Global level: single pass with decoupled look-back (Merrill & Garland 2016) ----
// Each block takes the next tile index from an atomic counter, so a tile
// only ever waits on tiles that have already started: no deadlock whatever
// order the hardware schedules blocks in. A tile
//   1. loads and scans its elements within the block (its aggregate),
//   2. publishes the aggregate (state "aggregate"); a tile whose inclusive
//      prefix needs nothing before it (tile 0) publishes that at once
//      (state "prefix"),
//   3. looks back: warp 0 reads the status of the 32 preceding tiles at a
//      time and combines their values in order, back to the nearest tile
//      with an inclusive prefix,
//   4. publishes its own inclusive prefix and rescans with the exclusive one.
// Input and output are read and written once (2n element moves instead of
// reduce-then-scan's 3n). How status and value are stored depends on the
// element size: see scan_tile_status in the prelude.
namespace gpu_scan {

// A look-back window's readiness from each lane's tile state (lane l holds
// tile window_end - 31 + l): nothing before the nearest inclusive prefix is
// needed, so only the lanes from it (`start`, lane 0 when there is none)
// up to lane 31 must be ready.
struct look_back_window {
  unsigned prefix_lanes;
  unsigned start;
  bool ready;
  __device__ __forceinline__ explicit look_back_window(unsigned state) {
    prefix_lanes = __ballot_sync(0xffffffffu, state == scan_tile_prefix);
    const unsigned ready_lanes = __ballot_sync(0xffffffffu, state != scan_tile_not_ready);
    start = prefix_lanes != 0 ? 31u - (unsigned)__clz((int)prefix_lanes) : 0u;
    const unsigned needed = 0xffffffffu << start;
    ready = (ready_lanes & needed) == needed;
  }
};

// A tile's state from its status word (lanes before tile 0 act as empty
// prefixes).
__device__ __forceinline__ unsigned look_back_state(long long p, unsigned word, unsigned epoch) {
  return p < 0 ? scan_tile_prefix : (word >> 2) == epoch ? (word & 3u) : scan_tile_not_ready;
}

// Warp 0's look-back for tile `tile` (> 0): returns the combination of all
// elements before the tile (the seed in front, through tile 0's prefix).
// Lane l reads tile window_end - 31 + l, so lane order is sequence order
// and the window is combined left to right (no commutativity needed).
//
// With WordsFirst, where an entry takes several chunks (elements over 12
// bytes), the warp polls the window's status words alone (one 4-byte load
// a lane) until the tiles it needs are ready, and only then reads the
// whole entries of those from the nearest prefix on. In the pipelined pass
// over 256-byte elements (entries of 22 chunks) on the H200, a poll of
// whole entries cost about 4,200 cycles and a poll of the words about
// 1,600 (clock64 around each), and 1.2 of the look-back's 3.2 polls of
// whole entries a tile found the window not ready: words first took it
// from 41.3% to 45.0% of copy speed at 2^24 and 2^25, and reading only
// the entries from the prefix on (about 39 of the 64 tiles of a
// look-back's two windows) to 47.5% (BENCHMARKS.md). The single pass over
// small tiles was not measured with it and keeps polling whole entries.
template <class Op, class Status, class T = typename Op::T, bool WordsFirst = false>
__device__ __noinline__ T decoupled_look_back(unsigned long long tile, const Status status, unsigned epoch) {
  const unsigned lane = threadIdx.x & 31u;
  long long window_end = (long long)tile - 1;
  T exclusive = Op::identity();
  bool have = false;
  // A tile past the first wave of resident blocks sleeps about a
  // microsecond before its first poll: its nearest predecessors started
  // about when it did and are still loading, and polling them now would
  // only add requests to the L2 lines they are about to publish to.
  if (tile >= 1024) __nanosleep(1000);
  // One loop: each round polls the window once; a round that finds the
  // needed tiles ready combines them and moves on, or stops at a prefix.
  // Every lane polls on every round (the same load instructions for the
  // whole warp) and no branch diverges within the warp.
  while (true) {
    const long long p = window_end - (31 - (long long)lane);
    // Lanes before tile 0 read tile 0 and act as empty prefixes.
    const unsigned long long polled_tile = p < 0 ? 0ull : (unsigned long long)p;
    // With WordsFirst, the lanes before the nearest prefix the words show
    // need no entry: they read as ready aggregates and are not combined.
    unsigned words_start = 0;
    if constexpr (WordsFirst && Status::chunks > 1) {
      while (true) {
        const look_back_window words(look_back_state(p, p < 0 ? 0u : status.poll_word(polled_tile), epoch));
        words_start = words.start;
        if (words.ready) break;
      }
    }
    // The whole entries (a tile seen ready above may read as not ready here
    // while its prefix overwrites its aggregate: the round starts again).
    T value = Op::identity();
    const unsigned word = lane >= words_start ? status.poll(polled_tile, value) : (epoch << 2) | scan_tile_aggregate;
    const look_back_window window_state(look_back_state(p, word, epoch));
    if (window_state.ready) {
      const bool used = lane >= window_state.start && p >= 0;
      value = used ? value : Op::identity();
      const T window = scan_shfl_idx(warp_inclusive_scan<Op>(value), 31);
      exclusive = have ? Op::combine(window, exclusive) : window;
      have = true;
      if (window_state.prefix_lanes != 0) break;
      window_end -= 32;
    }
  }
  return exclusive;
}

// Steps 2–4 for one tile; every thread of the block calls it and receives
// the tile's exclusive prefix (it synchronises the block). It runs once per
// tile and stays out of line, as does the look-back: inlined into the
// kernels, the look-back loop made ptxas spill a few bytes in some of them.
//  * `complete`: the tile's inclusive prefix is `complete_prefix` whatever
//    comes before it (tile 0 of a plain scan, a tile holding a segment head),
//    so it is published before looking back;
//  * `look_back`: whether the tile needs what comes before it; when not,
//    `no_look_back` is returned.
template <class Op, class Status, class T = typename Op::T>
__device__ __noinline__ T single_pass_prefix(unsigned long long tile, const T tile_total, bool complete, const T complete_prefix,
                                                     bool look_back, const T no_look_back, Status status, T* shared_prefix) {
  if (threadIdx.x < 32) {
    const unsigned epoch = scan_shared_epoch;  // the launch's (launch.cuh)
    if (threadIdx.x == 0) status.publish(tile, (epoch << 2) | (complete ? scan_tile_prefix : scan_tile_aggregate), complete ? complete_prefix : tile_total);
    T before = no_look_back;
    if (look_back) {
      before = decoupled_look_back<Op>(tile, status, epoch);
      if (threadIdx.x == 0 && !complete) status.publish(tile, (epoch << 2) | scan_tile_prefix, Op::combine(before, tile_total));
    }
    if (threadIdx.x == 0) *shared_prefix = before;
  }
  __syncthreads();
  return *shared_prefix;
}

// A single-pass scan over tiles of Items × Shape<Op>::block_threads elements.
// Every block takes one tile index from the launch state (launch.cuh); an
// index past the input's tiles ends the block (it cannot happen while the
// state is intact, but never reads or writes out of bounds).
// With segments the look-back runs over (flag, value) pairs: a tile
// holding a head knows its inclusive prefix (its last segment's partial)
// from its own elements, so it publishes it before looking back, and a
// tile whose first element is a head needs nothing from before it and
// skips the look-back. Look-backs therefore stop at the nearest tile with
// a head, and only the head-less tiles in between are combined, with the
// plain operator.
template <class Op, int Mode, class Seg, int Items, class T = typename Op::T>
__device__ __forceinline__ void scan_single_pass(const stage_input<Op>* input, const Seg& seg, stage_output<Op>* output, void* status, T* aggregates, T* prefixes,
                                                 scan_launch_state* launch, T* carry_out, const T seed, unsigned long long n) {
  constexpr int tile_items = Items * Shape<Op>::block_threads;
  __shared__ T staging[tile_items + tile_items / 32];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  __shared__ bool warp_flags[Seg::segmented ? Shape<Op>::warps : 1];
  __shared__ T shared_prefix;
  const unsigned long long tile = scan_single_pass_take_tile(launch, (n + tile_items - 1) / tile_items);
  if (tile == scan_no_tile) return;
  const tile_span span = span_of_tile<Op>(tile, n, tile_items);
  const unsigned long long base = span.base;
  const int valid = span.valid;
  unsigned heads = 0;
  if constexpr (Seg::heads_before_load) heads = seg.template thread_heads<Items>(base, valid, n);
  T items[Items];
  load_tile<Op>(input, base, valid, staging, items);
  if constexpr (!Seg::heads_before_load) heads = seg.template thread_heads<Items>(base, valid, n);
  scan_tile_status<T, Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride> tile_status(status);
  bool tile_flag;
  tile_scan_with<Op, Mode, Seg>(
      items, heads, seg, warp_totals, warp_flags, tile_flag,
      [&](const T& tile_total, bool has_head) {
        if constexpr (Seg::segmented) {
          // In warp 0: whether the tile's first element (thread 0's first item) is a head.
          const bool first_is_head = (__shfl_sync(0xffffffffu, heads, 0) & 1u) != 0;
          return single_pass_prefix<Op>(tile, tile_total, has_head, tile_total, !first_is_head, Op::identity(), tile_status, &shared_prefix);
        } else {
          // Tile 0's inclusive prefix holds the seed, so every later tile gets it.
          return single_pass_prefix<Op>(tile, tile_total, tile == 0, Op::combine(seed, tile_total), tile != 0, seed, tile_status, &shared_prefix);
        }
      },
      // The staging buffer still holds the tile.
      [&](T (&again)[Items]) { read_items<Op>(staging, valid, again); });
  if constexpr (mirrored_memory<Op>::value) {
    // A reverse scan's span, computed again from the tile index in shared
    // memory rather than kept in registers through the look-back (kept,
    // the larger elements' kernels spilled a few bytes at their register cap).
    const tile_span again = span_of_tile<Op>(scan_shared_tile, n, tile_items);
    store_tile<Op>(output, again.base, again.valid, staging, items);
  } else {
    store_tile<Op>(output, base, valid, staging, items);
  }
  if (tile == 0) scan_single_pass_sweep<Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride>(status, launch, n, tile_items);
  // The last tile's carry-out, from its prefix and pair still in shared
  // memory and its index in scan_shared_tile: last, so that nothing stays
  // live across the call (before the sweep, a reverse single pass spilled).
  if (carry_out != nullptr && threadIdx.x == 0 && scan_shared_tile == (n + tile_items - 1) / tile_items - 1)
    write_block_carry_out<Op, Seg>(carry_out, shared_prefix, warp_totals, warp_flags);
}

}  // namespace gpu_scan
