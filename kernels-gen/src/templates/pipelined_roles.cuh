// ---- Pipelined single pass: the warps' roles (design in pipelined_stages.cuh) ----
// The lookahead (walking forward over aggregates, or looking back from each
// tile), the producer and the store, over a block's stages
// (pipelined_shared).
namespace gpu_scan {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// One round of a lookahead warp's polling (both pipelined kernels): lane l
// reads the status and value of its per_lane consecutive tiles next +
// per_lane·l … below `target` (four: next + 4l … next + 4l + 3); the warp then
// finds the run of ready tiles from `next` on, which ends in the first lane
// with fewer than all of its tiles ready. A tile published after the poll
// waits for the next round.
template <class Op>
struct lookahead_round {
  typedef typename Op::T T;
  static constexpr int per_lane = Shape<Op>::lookahead_tiles_per_lane;
  T values[per_lane];
  unsigned states[per_lane];
  unsigned long long first;  // this lane's first tile
  unsigned count;            // the warp's run of ready tiles
  int used;                  // how many of the run are this lane's
  template <class Status>
  __device__ __forceinline__ lookahead_round(const Status& status, unsigned epoch, unsigned long long next, unsigned long long target) {
    const unsigned lane = threadIdx.x & 31u;
    first = next + per_lane * lane;
#pragma unroll
    for (int r = 0; r < per_lane; ++r) {
      const unsigned long long tile = first + r;
      const unsigned word = status.poll(tile < target ? tile : target - 1, values[r]);
      states[r] = tile < target && (word >> 2) == epoch ? (word & 3u) : scan_tile_not_ready;
    }
    int ready = 0;  // this lane's leading ready tiles
#pragma unroll
    for (int r = 0; r < per_lane; ++r) ready += ready == r && states[r] != scan_tile_not_ready;
    const unsigned short_lanes = __ballot_sync(0xffffffffu, ready < per_lane);
    const unsigned last_lane = short_lanes != 0 ? (unsigned)__ffs(short_lanes) - 1u : 32u;
    const int last_ready = __shfl_sync(0xffffffffu, ready, last_lane & 31u);
    count = per_lane * last_lane + (last_lane < 32 ? last_ready : 0);
    used = lane < last_lane ? per_lane : lane == last_lane ? ready : 0;
  }
};

// Lookahead warp: extends `running` (the seed and the pairs of tiles
// [0, next)) up to `target`, a round at a time: each lane combines its
// share of the ready run in order, and one warp scan combines the lanes in
// lane order (sequence order). With segments, a tile that published a
// prefix (it holds a head) replaces what came before it. The warp spins
// without sleeping, since every tile of its block waits on it (a sleep
// after an empty poll measured no different).
template <class Op, class Seg, class Status, class T = typename Op::T>
__device__ __forceinline__ void pipelined_lookahead(const Status& status, unsigned epoch, unsigned long long& next, T& running, unsigned long long target) {
  while (next < target) {
    lookahead_round<Op> round(status, epoch, next, target);
    if (round.count == 0) continue;
    T share = Op::identity();
    bool share_flag = false;
#pragma unroll
    for (int r = 0; r < lookahead_round<Op>::per_lane; ++r) {
      if (r < round.used) {
        const bool head = Seg::segmented && round.states[r] == scan_tile_prefix;
        share = head || r == 0 ? round.values[r] : Op::combine(share, round.values[r]);
        share_flag = share_flag || head;
      }
    }
    const T total = scan_shfl_idx(warp_pair_inclusive_scan<Op, Seg>(share, share_flag), 31);
    const bool total_flag = Seg::segmented && __shfl_sync(0xffffffffu, (int)share_flag, 31) != 0;
    running = total_flag ? total : Op::combine(running, total);
    next += round.count;
  }
}

// The roles both pipelined kernels (plain and segmented) share, over a
// shared-memory layout `Shared` with tile(s), barrier(which, s),
// tile_index(s) and prefix(s).

// Thread 0 sets up every stage's barriers; then the roles part.
// `loaded_arrivals`: the producer's, and the heads warp's lanes' where it
// finds heads.
template <class Op, class Shared, class T = typename Op::T>
__device__ __forceinline__ void pipelined_init_barriers(const Shared& shared, unsigned loaded_arrivals = 1) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Shared::stages; ++s) {
      scan_mbarrier_init(shared.barrier(stage_loaded, s), loaded_arrivals);
      scan_mbarrier_init(shared.barrier(stage_indexed, s), 1);
      scan_mbarrier_init(shared.barrier(stage_reduced, s), Shape<Op>::pipelined_squad_threads);
      scan_mbarrier_init(shared.barrier(stage_prefixed, s), 1);
      scan_mbarrier_init(shared.barrier(stage_rescanned, s), Shape<Op>::pipelined_squad_threads);
      scan_mbarrier_init(shared.barrier(stage_freed, s), 1);
    }
    scan_fence_barrier_init();
  }
  __syncthreads();  // the only block-wide barrier
}

// Producer (one lane, or a warp where stage_runs::warp_copies): a free
// stage, a tile index, the tile's load. Lane 0 takes the indices and keeps
// the barriers; with warp_copies all lanes share the tile's bulk copies,
// one a run. With ClaimAhead (segmented scans) the index is taken a round
// ahead, right after the previous tile's load, so that its round trip
// overlaps the wait for the free stage: bit-flag segmented sums gained
// 0.7% at 2^28 on the H200. Plain scans take it once the stage is free:
// their prefixes chain through every tile, and tiles claimed ahead load
// further out of order, which cost affine maps 1.6% and the 16-byte
// statistics about 1% there (BENCHMARKS.md). A tile may bring
// `extra_bytes(extent)` more bytes, which lane 0's `load_extra(s, extent,
// barrier)` bulk-loads on the same barrier. The first index brings the
// launch's epoch, which the other roles read from scan_shared_epoch once a
// barrier of the first tile has passed. Every block takes one index past
// the last tile before it stops, so a launch takes tiles + blocks indices
// (launch.cuh); the last one's taker, whose block needs no more tiles,
// also sweeps. The end mark goes to EndMarks consecutive stages, so that
// each of that many heads warps, which take the stages in turn, meets one
// (no other role waits past the first).
template <bool ClaimAhead, int EndMarks, class Op, class Shared, class ExtraBytes, class LoadExtra, class T = typename Op::T>
__device__ __forceinline__ void pipelined_producer(const Shared& shared, const T* input, void* status, scan_launch_state* launch,
                                                      unsigned long long n, unsigned long long tiles, ExtraBytes extra_bytes,
                                                      LoadExtra load_extra) {
  constexpr bool warp = stage_runs<Op>::warp_copies;
  const unsigned lane = warp ? threadIdx.x & 31u : 0u;
  const bool leader = lane == 0;
  const unsigned long long last_index = tiles + gridDim.x - 1;
  const auto take = [&](int k) -> unsigned long long {
    unsigned long long index = 0;
    if (leader) {
      const scan_ticket ticket = scan_launch_take(launch, last_index);
      if (k == 0) scan_shared_epoch = ticket.epoch;
      if (ticket.index == last_index) scan_launch_sweep<Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride>(status, launch, ticket.epoch, 0, 1, tiles);
      index = ticket.index < tiles ? ticket.index : tiles;
    }
    if constexpr (warp) index = __shfl_sync(0xffffffffu, index, 0);
    return index;
  };
  typedef typename Shared::round Round;
  // A round's stage is free once the tile of the round a lap back was stored.
  const auto wait_free = [&](Round r) {
    if (r.k >= Shared::stages) scan_mbarrier_wait(shared.barrier(stage_freed, r.stage()), r.lap_back_parity());
  };
  unsigned long long tile = ClaimAhead ? take(0) : 0ull;
  for (Round r{0};; r = r.after(1)) {
    const int s = r.stage();
    wait_free(r);
    if (!ClaimAhead) tile = take(r.k);
    if (leader) {
      shared.tile_index(s) = tile;
      shared.arrive(stage_indexed, r);
    }
    if (tile >= tiles) {
      if (!leader) return;
      shared.arrive(stage_loaded, r);  // the others read the end mark and stop
      // The next stages' earlier tiles are stored before the last one is,
      // so their stages free (the last stored tile's may never do: EndMarks
      // is below the stages, checked by the kernel).
      for (Round j = r.after(1); j.k < r.k + EndMarks; j = j.after(1)) {
        wait_free(j);
        shared.tile_index(j.stage()) = tiles;
        shared.arrive(stage_indexed, j);
        shared.arrive(stage_loaded, j);
      }
      return;
    }
    const pipelined_extent<Op> extent(tile, n);
    const unsigned bytes = (unsigned)extent.bulk * (unsigned)sizeof(T);
    const unsigned extra = extra_bytes(extent);
    if (bytes + extra != 0) {
      if (leader) scan_mbarrier_arrive_expect_bytes(shared.barrier(stage_loaded, s), bytes + extra);
      if constexpr (warp) {
        __syncwarp();
        stage_runs<Op>::each_run_copy(shared.tile(s), extent.bulk, lane, [&](T* to, int first, unsigned run_bytes) {
          scan_bulk_load(to, input + extent.base + first, run_bytes, shared.barrier(stage_loaded, s));
        });
      } else if (bytes != 0) {
        scan_bulk_load(shared.tile(s), input + extent.base, bytes, shared.barrier(stage_loaded, s));
      }
      if (extra != 0 && leader) load_extra(s, extent, shared.barrier(stage_loaded, s));
    } else if (leader) {
      shared.arrive(stage_loaded, r);
    }
    if (ClaimAhead) tile = take(r.k + 1);
  }
}

// Lookahead warp: for each of this block's tiles in turn, `advance(next,
// running, tile)` extends the running prefix (from `running`, over tiles
// [0, next)) up to the tile, and lane 0 hands it to the rescan squad. The
// block of the last tile then extends it over that tile too (its reduce
// squad publishes it without waiting on anyone) for the carry-out, unless
// `carry_out` is null.
template <class Op, class Shared, class Advance, class T = typename Op::T>
__device__ __forceinline__ void pipelined_lookahead_warp(const Shared& shared, unsigned long long tiles, T running, T* carry_out, Advance advance) {
  unsigned long long next = 0;
  // One call of `advance` per round (a second one, inlined, made ptxas
  // spill the wide elements' kernels): a round extends the prefix to the
  // next tile, or, after the last tile, over it for the carry-out.
  bool owe_carry = false;
  for (typename Shared::round r{0};; r = r.after(1)) {
    const int s = r.stage();
    unsigned long long target = tiles;
    if (!owe_carry) {
      shared.wait(stage_indexed, r);
      target = shared.tile_index(s);
      if (target >= tiles) return;
    }
    advance(next, running, target);
    if (owe_carry) {
      if ((threadIdx.x & 31u) == 0) *carry_out = running;
      return;
    }
    // Every lane's read of the stage (its index) before lane 0 hands it on:
    // the producer rewrites it once the chain from that arrival frees it.
    __syncwarp();
    if ((threadIdx.x & 31u) == 0) {
      shared.prefix(s) = running;
      shared.arrive(stage_prefixed, r);
    }
    __syncwarp();
    owe_carry = target == tiles - 1 && carry_out != nullptr;
  }
}

// The pair of a reduced tile in stage s (its total, and whether it holds a
// head): the reduce squad's warp pairs in shared memory, combined in order.
template <class Op, class Seg, class Shared, class T = typename Op::T>
__device__ __forceinline__ T stage_tile_pair(const Shared& shared, int s, bool& flag) {
  T total = shared.warp_total(s, 0);
  flag = Seg::segmented && shared.warp_flags(s)[0];
#pragma unroll
  for (int w = 1; w < Shape<Op>::pipelined_squad_warps; ++w)
    pair_accumulate<Op, Seg>(total, flag, shared.warp_total(s, w), Seg::segmented && shared.warp_flags(s)[w]);
  return total;
}

// Lookahead warp of wide elements (Shape<Op>::pipelined_look_back): for
// each of this block's tiles in turn, a decoupled look-back (single_pass.cuh;
// it polls the status words first, then reads the entries of the tiles it
// needs) from the tile to the nearest tile that published an inclusive prefix,
// over the aggregates in between, while the tile loads and reduces; then,
// the tile reduced, its inclusive prefix published for the tiles behind
// it, and its exclusive one handed to the rescan squad. (The forward walk
// combines every tile's aggregate in every block: work that grows with the
// number of blocks and, for wide elements, outlasted the tiles' loads.)
// Tile 0's reduce squad publishes its inclusive prefix itself (the seed
// then its total), as does a tile holding a segment head (its last
// segment's partial); a tile's pair comes from stage_tile_pair, as reduce
// thread 0's did. The block of the last tile writes its inclusive prefix
// to `carry_out` unless null.
template <class Op, class Seg, class Shared, class Status, class T = typename Op::T>
__device__ __forceinline__ void pipelined_look_back_warp(const Shared& shared, Status status, unsigned long long tiles, const T seed, T* carry_out) {
  const unsigned lane = threadIdx.x & 31u;
  for (typename Shared::round r{0};; r = r.after(1)) {
    const int s = r.stage();
    shared.wait(stage_indexed, r);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) return;
    const unsigned epoch = scan_shared_epoch;  // the producer set it before the first index
    // Tile 0 needs nothing before it but the seed (with segments, its first
    // element is a head).
    const T before = tile == 0 ? (Seg::segmented ? Op::identity() : seed) : decoupled_look_back<Op, Status, T, true>(tile, status, epoch);
    // Waiting here, before the rescan squad may run, also keeps the stage
    // (its warp pairs) from being reused while they are read.
    shared.wait(stage_reduced, r);
    bool flag;
    const T total = stage_tile_pair<Op, Seg>(shared, s, flag);
    const bool published = flag || (!Seg::segmented && tile == 0);
    const T inclusive = flag ? total : Op::combine(before, total);
    __syncwarp();  // every lane's reads of the stage before lane 0 hands it on
    if (lane == 0) {
      if (!published) status.publish(tile, (epoch << 2) | scan_tile_prefix, inclusive);
      shared.prefix(s) = before;
      shared.arrive(stage_prefixed, r);
      if (carry_out != nullptr && tile == tiles - 1) *carry_out = inclusive;
    }
    __syncwarp();
  }
}

// Whether the store warp frees each stage as soon as its tile's store has
// read it (FreeAtOnce in pipelined_store_warp) rather than when the next
// tile's store is issued. Holding a stage through the next tile's rescan
// costs up to a third of the pipeline where there are 3 stages or fewer
// (every element over 48 bytes: kernels_gen::pipelined_items_per_thread):
// freeing at once took 72-byte affine maps from 76% to 93% of copy speed
// at 2^26 and 256-byte ones from 41% to 44% (H100, the same call, 3
// stages of about 48 KiB then, BENCHMARKS.md). Over segment
// offsets it took power-law lengths from 82% to 87% at 2^28. With 4 or 6
// stages freeing at once moved 64- and 96-byte maps, `u32` sums, affine
// maps and statistics by about a point either way, so those keep one
// store in flight.
template <class Seg>
constexpr bool pipelined_frees_at_once(int stages) {
  return stages <= 3 || pipelined_heads<Seg>::heads_warps;
}

// Store (one lane, or a warp where stage_runs::warp_copies): each
// rescanned tile back to global memory, with warp_copies the lanes sharing
// its bulk copies, one a run. A stage is freed once its store has read it
// (FreeAtOnce), or once the store after it is issued and its own has been
// read, so that one store stays in flight behind the rescans. Bulk groups
// are each lane's own: every lane closes one group a tile and waits for
// its own, and lane 0 frees the stage after all lanes. (The few elements
// of a tail tile the bulk copies leave out were written by the rescan
// squad.)
template <bool FreeAtOnce, class Op, class Shared, class T = typename Op::T>
__device__ __forceinline__ void pipelined_store_warp(const Shared& shared, T* output, unsigned long long n, unsigned long long tiles) {
  constexpr bool warp = stage_runs<Op>::warp_copies;
  const unsigned lane = warp ? threadIdx.x & 31u : 0u;
  for (typename Shared::round r{0};; r = r.after(1)) {
    const int s = r.stage();
    shared.wait(stage_loaded, r);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) break;
    shared.wait(stage_rescanned, r);
    const pipelined_extent<Op> extent(tile, n);
    if constexpr (warp) {
      stage_runs<Op>::each_run_copy(shared.tile(s), extent.bulk, lane,
                                    [&](T* from, int first, unsigned run_bytes) { scan_bulk_store(output + extent.base + first, from, run_bytes); });
    } else {
      scan_bulk_store(output + extent.base, shared.tile(s), (unsigned)extent.bulk * (unsigned)sizeof(T));
    }
    scan_bulk_commit();
    if constexpr (FreeAtOnce) {
      scan_bulk_wait_read_all();
      if constexpr (warp) __syncwarp();
      if (lane == 0) shared.arrive(stage_freed, r);
    } else {
      scan_bulk_wait_read_all_but_newest();
      if constexpr (warp) __syncwarp();
      if (r.k >= 1 && lane == 0) shared.arrive(stage_freed, r.after(-1));
    }
  }
  scan_bulk_wait_all();
}
#endif

}  // namespace gpu_scan
