// ---- Pipelined single pass: the kernel (design in pipelined_stages.cuh) ----
namespace gpu_scan {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Reduce squad: thread pairs, their warp-inclusive scans (for the rescan
// squad), the warps' pairs, and the tile's, published at once: an
// aggregate, or a prefix where a segment starts in the tile.
template <class Op, class Seg, class Heads, class Shared, class Status, class T = typename Op::T>
__device__ __forceinline__ void pipelined_reduce_squad(const Shared& shared, const T* input, const Seg& seg, Status& tile_status, const T seed,
                                                       unsigned long long n, unsigned long long tiles) {
  constexpr int squad = Shape<Op>::pipelined_squad_threads;
  constexpr int items = Shape<Op>::pipelined_items_per_thread;
  const int warp = (int)(threadIdx.x >> 5);
  const unsigned lane = threadIdx.x & 31u;
  const int first = (int)threadIdx.x * items;
  for (typename Shared::round r{0};; r = r.after(1)) {
    const int s = r.stage();
    // With segments the index comes first, so that the flags are read
    // while the tile loads (offsets' heads come with the tile, from the
    // heads warp).
    shared.wait(Heads::first_wait, r);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) break;
    const pipelined_extent<Op> extent(tile, n);
    const unsigned long long heads = Heads::template squad_heads<items, squad>(seg, shared, s, r.parity(), extent, first, n);
    pipelined_pad_tail<Op>(shared.tile(s), input, extent);  // padding has no heads
    T* const tile_items = shared.tile(s);
    const int t = (int)threadIdx.x;
    const unsigned rot = threadIdx.x & 7u;
    bool lane_flag = heads != 0ull;
    const T lane_total = warp_pair_inclusive_scan<Op, Seg>(
        thread_pair_reduce<Op, Seg, items>([&](int i) -> T { return stage_runs<Op>::item_ref(tile_items, t, i); }, heads, seg), lane_flag);
    stage_element<T>{shared.lane_totals(s) + threadIdx.x, rot} = lane_total;
    if constexpr (Seg::segmented) {
      shared.heads(s)[threadIdx.x] = heads;
      shared.lane_flags(s)[threadIdx.x] = lane_flag;
    }
    if (lane == 31) {
      shared.keep_warp_total(s, warp, lane_total);
      if constexpr (Seg::segmented) shared.warp_flags(s)[warp] = lane_flag;
    }
    scan_named_barrier(1, squad);
    if (threadIdx.x == 0) {
      bool tile_flag;
      const T tile_total = stage_tile_pair<Op, Seg>(shared, s, tile_flag);
      // A tile holding a head knows the partial open at its end whatever
      // precedes it: it publishes it as a prefix. So does tile 0 of a
      // plain scan whose lookahead looks back (the seed, then its total).
      const bool seeded = Shape<Op>::pipelined_look_back && !Seg::segmented && tile == 0;
      tile_status.publish(tile, (scan_shared_epoch << 2) | (tile_flag || seeded ? scan_tile_prefix : scan_tile_aggregate),
                          seeded ? Op::combine(seed, tile_total) : tile_total);
    }
    shared.arrive(stage_reduced, r);
  }
}

// Rescan squad: the partial open before each thread's first item (the
// lifted exclusive prefix), then the rescan in place.
template <class Op, int Mode, class Seg, class Shared, class T = typename Op::T>
__device__ __forceinline__ void pipelined_rescan_squad(const Shared& shared, const Seg& seg, T* output, unsigned long long n, unsigned long long tiles) {
  constexpr int squad = Shape<Op>::pipelined_squad_threads;
  constexpr int items = Shape<Op>::pipelined_items_per_thread;
  const unsigned lane = threadIdx.x & 31u;
  const int t = (int)threadIdx.x - squad;
  const int squad_warp = (int)(threadIdx.x >> 5) - Shape<Op>::pipelined_squad_warps;
  for (typename Shared::round r{0};; r = r.after(1)) {
    const int s = r.stage();
    shared.wait(stage_loaded, r);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) break;
    shared.wait(stage_reduced, r);
    const unsigned long long heads = Seg::segmented ? shared.heads(s)[t] : 0ull;
    // This warp's earlier lanes, then (when no head lies there) the
    // earlier warps' pairs in front.
    const unsigned rot = (unsigned)t & 7u;
    T before = lane != 0 ? (T)stage_element<T>{shared.lane_totals(s) + (t - 1), rot} : Op::identity();
    bool before_flag = Seg::segmented && lane != 0 && shared.lane_flags(s)[t - 1];
    if (!before_flag && squad_warp > 0) {
      T warps_before = shared.warp_total(s, 0);
      bool warps_flag = Seg::segmented && shared.warp_flags(s)[0];
      for (int w = 1; w < squad_warp; ++w)
        pair_accumulate<Op, Seg>(warps_before, warps_flag, shared.warp_total(s, w), Seg::segmented && shared.warp_flags(s)[w]);
      before = lane != 0 ? Op::combine(warps_before, before) : warps_before;
      before_flag = warps_flag;
    }
    shared.wait(stage_prefixed, r);
    const T running = before_flag ? before : Op::combine(shared.prefix(s), before);
    T* const tile_items = shared.tile(s);
    thread_pair_rescan<Op, Mode, Seg, items>([&](int i) { return stage_runs<Op>::item_ref(tile_items, t, i); }, heads, running, seg);
    pipelined_store_tail<Op>(tile_items, output, pipelined_extent<Op>(tile, n), t);
    scan_fence_shared_for_bulk();
    shared.arrive(stage_rescanned, r);
  }
}

// Heads warp h of HeadsWarps: the head bits of tiles h, h + HeadsWarps, …
// of this block from the offsets, written to the stage once the index is
// known (the stage is free then: its previous tile was reduced,
// rescanned and stored), while the tile loads; every lane arrives on the
// stage's `loaded` barrier after.
template <class Op, class Heads, int HeadsWarps, class Seg, class Shared>
__device__ __forceinline__ void pipelined_heads_warp(const Shared& shared, const Seg& seg, int h, unsigned long long n, unsigned long long tiles) {
  for (typename Shared::round r{h};; r = r.after(HeadsWarps)) {
    const int s = r.stage();
    shared.wait(stage_indexed, r);
    const unsigned long long tile = shared.tile_index(s);
    if (tile < tiles) {
      const pipelined_extent<Op> extent(tile, n);
      Heads::warp_heads(seg, shared, s, extent);
    }
    shared.arrive(stage_loaded, r);
    if (tile >= tiles) break;
  }
}
#endif

// The pipelined kernel: runs on a persistent grid with
// pipelined_shared<Op, Seg>::shared_bytes bytes of dynamic shared memory;
// input, output (and bit flags) 16-byte aligned. With segments, head flags
// given as bits come with a whole tile, in the producer's bulk loads;
// otherwise (bytes, or the tail tile) the reduce squad reads each thread's
// flags from global memory while the tile loads (rows of a fixed length
// compute them; with keys, the squad compares the tile's keys together
// into the stage's head bits), and keeps them as a 64-bit mask for the
// rescan. A tile holding a head publishes its last
// segment's partial as a prefix, which the lookahead takes in place of
// everything before it. Each warp takes one role, every role walking the
// stages round by round (stage_round). Deterministic (plain scans whose
// lookahead walks): the lookahead links the tiles' aggregates in the
// chain of deterministic.cuh, so the bits depend only on the input.
template <class Op, int Mode, class Seg, bool Deterministic = false, class T = typename Op::T>
__device__ __forceinline__ void scan_pipelined(const T* input, const Seg& seg, T* output, void* status, T* aggregates, T* prefixes,
                                               scan_launch_state* launch, T* carry_out, const T seed, unsigned long long n, unsigned long long tiles) {
  // Reverse scans take the pipelined pass without segments only: mirrored,
  // a tail tile's padding would come before its first head.
  static_assert(!(mirrored_memory<Op>::value && Seg::segmented), "no segmented reverse pipelined pass");
  static_assert(!(Deterministic && Seg::segmented), "deterministic pipelined scans are plain");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  typedef pipelined_shared<Op, Seg> Shared;
  // Elements whose lookahead looks back have no deterministic pipelined
  // pass (the host takes the three passes of deterministic.cuh).
  if constexpr (Shared::supported && !(Deterministic && Shape<Op>::pipelined_look_back)) {
    constexpr int stages = Shared::stages;
    const Shared shared{scan_dynamic_shared};
    const int warp = (int)(threadIdx.x >> 5);
    const unsigned lane = threadIdx.x & 31u;
    // Where the tiles' heads come from (pipelined_heads.cuh).
    typedef pipelined_heads<Seg> Heads;
    constexpr bool heads_warp = Heads::heads_warps;
    // Heads warps taking the tiles in turn, each of them one tile at a
    // time: more than one where a tile's heads take longer than a tile's
    // share of the copy (its index, then its offsets: two round trips to
    // memory).
    constexpr int heads_warps = heads_warp ? Shape<Op>::pipelined_heads_warps : 1;
    // A heads warp waits for its next stage's index only after the stage's
    // tile before (`heads_warps` tiles back, at most `stages`) was indexed,
    // and that stage is not indexed again before the warp has found its
    // heads: a wait is never a phase behind or ahead. The end marks free
    // only stages whose tiles were stored before the last one.
    static_assert(heads_warps >= 1 && heads_warps < stages, "every heads warp meets an end mark");
    pipelined_init_barriers<Op>(shared, heads_warp ? 33u : 1u);
    scan_tile_status<T, Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride> tile_status(status);
    if (warp < Shape<Op>::pipelined_squad_warps) {
      pipelined_reduce_squad<Op, Seg, Heads>(shared, input, seg, tile_status, seed, n, tiles);
    } else if (warp < 2 * Shape<Op>::pipelined_squad_warps) {
      pipelined_rescan_squad<Op, Mode, Seg>(shared, seg, output, n, tiles);
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps) {
      // Producer (one lane), with the head bits that travel with a tile.
      const auto bits_bytes = [](const pipelined_extent<Op>& extent) -> unsigned { return Heads::bulk_bytes(extent); };
      const auto load_bits = [&](int s, const pipelined_extent<Op>& extent, unsigned long long* loaded) {
        Heads::bulk_load(seg, shared, s, extent, loaded);
      };
      if (stage_runs<Op>::warp_copies || lane == 0)
        pipelined_producer<Seg::segmented, heads_warps, Op>(shared, input, status, launch, n, tiles, bits_bytes, load_bits);
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps + 1) {
      if constexpr (Deterministic) {
        // Lookahead linking the tiles' totals one by one from the seed.
        pipelined_lookahead_warp<Op>(shared, tiles, seed, carry_out, [&](unsigned long long& next, T& running, unsigned long long tile) {
          deterministic_lookahead<Op>(tile_status, scan_shared_epoch, next, running, tile);
        });
      } else if constexpr (Shape<Op>::pipelined_look_back) {
        pipelined_look_back_warp<Op, Seg>(shared, tile_status, tiles, seed, carry_out);
      } else {
        // Lookahead: the running prefix through this block's tiles, in
        // order, from the seed (with segments, tile 0 holds a head, element
        // 0, so what precedes it never matters).
        pipelined_lookahead_warp<Op>(shared, tiles, Seg::segmented ? Op::identity() : seed, carry_out, [&](unsigned long long& next, T& running, unsigned long long tile) {
          pipelined_lookahead<Op, Seg>(tile_status, scan_shared_epoch, next, running, tile);
        });
      }
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps + 2) {
      // Store (one lane, or the warp).
      if (stage_runs<Op>::warp_copies || lane == 0) pipelined_store_warp<pipelined_frees_at_once<Seg>(stages), Op>(shared, output, n, tiles);
    } else if constexpr (heads_warp) {
      pipelined_heads_warp<Op, Heads, heads_warps>(shared, seg, warp - (2 * Shape<Op>::pipelined_squad_warps + 3), n, tiles);
    }
    return;
  }
#endif
  __trap();  // the host launches this kernel only where it is supported
}

}  // namespace gpu_scan
