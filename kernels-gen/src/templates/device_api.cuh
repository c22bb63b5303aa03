// ---- Device API: an operator's scans inside your own kernels ----
// `gpu_scan::DeviceApi` hands this header out after the operator's policy
// (struct gpu_scan_ops::<name>, with T, identity() and combine(x, y)). All
// functions use threadIdx.x alone: launch one-dimensional blocks.
//
//   Warp level (all 32 lanes of the warp call them; no shared memory):
//     T warp_inclusive_scan<Op>(T v)                    lane i: v_0 ∘ … ∘ v_i
//     T warp_exclusive_scan<Op>(T v, T& total)          lane i: v_0 ∘ … ∘ v_(i-1)
//     T warp_inclusive_reverse_scan<Op>(T v)            lane i: v_i ∘ … ∘ v_31
//     T warp_exclusive_reverse_scan<Op>(T v, T& total)  lane i: v_(i+1) ∘ … ∘ v_31
//   Block level: gpu_scan::BlockScan<Op, BlockThreads> below.
// Reverse (suffix) scans keep the operator's order: x ∘ y, x the earlier
// element, exactly as forward ones.
namespace gpu_scan {

// Lane i returns v_i ∘ … ∘ v_31: Kogge-Stone from the other end, each lane
// putting its own partial *in front of* the later one it receives.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T warp_inclusive_reverse_scan(T value) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    const T later = scan_shfl_down(value, offset);
    if (lane + offset < 32) value = Op::combine(value, later);
  }
  return value;
}

// Lane i returns v_(i+1) ∘ … ∘ v_31 (lane 31: the identity); every lane
// receives v_0 ∘ … ∘ v_31 in `total`.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T warp_exclusive_reverse_scan(T value, T& total) {
  const T inclusive = warp_inclusive_reverse_scan<Op>(value);
  total = scan_shfl_idx(inclusive, 0);
  const T next = scan_shfl_down(inclusive, 1);
  return (threadIdx.x & 31u) == 31u ? Op::identity() : next;
}

// The mirror of block_exclusive_scan (block.cuh): thread t returns
// v_(t+1) ∘ … ∘ v_(32·Warps-1) (the last thread: the identity), and every
// thread the block's total. `warp_totals`: shared, Warps + 1 elements.
template <class Op, int Warps, class T = typename Op::T>
__device__ __forceinline__ T block_exclusive_reverse_scan(T value, T* warp_totals, T& block_total) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  T warp_total;
  const T in_warp = warp_exclusive_reverse_scan<Op>(value, warp_total);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    // Warp 0 turns the warp totals into the totals of the warps after each.
    const T total = lane < Warps ? warp_totals[lane] : Op::identity();
    T all_warps;
    const T after = warp_exclusive_reverse_scan<Op>(total, all_warps);
    if (lane < Warps) warp_totals[lane] = after;
    if (lane == 0) warp_totals[Warps] = all_warps;
  }
  __syncthreads();
  block_total = warp_totals[Warps];
  // Lane 31's in-warp suffix is the identity: skip combining with it.
  return lane == 31 ? warp_totals[warp] : Op::combine(in_warp, warp_totals[warp]);
}

// Scans across a block of BlockThreads threads (a multiple of 32, at most
// 1024, equal to blockDim.x). Every thread of the block calls each function
// the same number of times: they synchronise the block. Each function ends
// with a barrier, so calls may follow each other on the same storage.
//
// Shared memory: one TempStorage per block scan in flight,
// sizeof(TempStorage) == (BlockThreads / 32 + 1) · sizeof(T) bytes:
//
//   typedef gpu_scan::BlockScan<gpu_scan_ops::affine, 256> Scan;
//   __shared__ Scan::TempStorage storage;
//   T total;
//   T prefix = Scan(storage).inclusive(value, total);
//
// Items per thread are in the "blocked" order: thread t holds elements
// t·Items … t·Items + Items − 1 of the block's chunk, so the chunk's
// element order is (thread, item). Chunked loops carry a running prefix:
//
//   T running = Op::identity();            // the same value in every thread
//   for (chunk …) {
//     T items[8];  /* load the chunk's elements (identity past the end) */
//     Scan(storage).inclusive_chunk(items, running);
//     /* items[i]: everything before the chunk ∘ the chunk up to item i */
//   }
//
// Every function has a reverse (suffix) twin, `…_reverse`: element k gets
// the elements from k (inclusive) or after k (exclusive) to the end, in
// the operator's order. A reverse chunked loop walks the chunks from the
// last, and `running` carries everything after the chunk.
template <class Op, int BlockThreads>
struct BlockScan {
  typedef typename Op::T T;
  static_assert(BlockThreads % 32 == 0 && BlockThreads >= 32 && BlockThreads <= 1024,
                "BlockScan: BlockThreads is a multiple of 32 from 32 to 1024");
  static constexpr int warps = BlockThreads / 32;

  // The block scan's shared memory: the warps' totals and the block's.
  struct TempStorage {
    T warp_totals[warps + 1];
  };

  __device__ __forceinline__ explicit BlockScan(TempStorage& storage) : storage_(storage) {}

  // One value per thread. Thread t gets v_0 ∘ … ∘ v_t; every thread gets
  // v_0 ∘ … ∘ v_(B-1) in `total`.
  __device__ __forceinline__ T inclusive(T value, T& total) {
    const T prefix = block_inclusive_scan<Op, warps>(value, storage_.warp_totals, total);
    __syncthreads();
    return prefix;
  }

  // Thread t gets v_0 ∘ … ∘ v_(t-1) (thread 0: the identity), and `total` as above.
  __device__ __forceinline__ T exclusive(T value, T& total) {
    const T prefix = block_exclusive_scan<Op, warps>(value, storage_.warp_totals, total);
    __syncthreads();
    return prefix;
  }

  // Thread t gets v_t ∘ … ∘ v_(B-1), and `total` as above.
  __device__ __forceinline__ T inclusive_reverse(T value, T& total) {
    const T after = block_exclusive_reverse_scan<Op, warps>(value, storage_.warp_totals, total);
    __syncthreads();
    return threadIdx.x == BlockThreads - 1 ? value : Op::combine(value, after);
  }

  // Thread t gets v_(t+1) ∘ … ∘ v_(B-1) (the last thread: the identity), and `total` as above.
  __device__ __forceinline__ T exclusive_reverse(T value, T& total) {
    const T after = block_exclusive_reverse_scan<Op, warps>(value, storage_.warp_totals, total);
    __syncthreads();
    return after;
  }

  // The block's Items · BlockThreads elements in blocked order, scanned in
  // place (inclusive); `total` receives all of them combined.
  template <int Items>
  __device__ __forceinline__ void inclusive(T (&items)[Items], T& total) {
    scan_items<Items, true, true, false>(items, Op::identity(), total);
  }

  // As above, exclusive: item i gets the elements before it (the identity first).
  template <int Items>
  __device__ __forceinline__ void exclusive(T (&items)[Items], T& total) {
    scan_items<Items, false, true, false>(items, Op::identity(), total);
  }

  // Reverse: each item gets itself and the elements after it.
  template <int Items>
  __device__ __forceinline__ void inclusive_reverse(T (&items)[Items], T& total) {
    scan_items<Items, true, true, true>(items, Op::identity(), total);
  }

  // Reverse, exclusive: each item gets the elements after it (the last: the identity).
  template <int Items>
  __device__ __forceinline__ void exclusive_reverse(T (&items)[Items], T& total) {
    scan_items<Items, false, true, true>(items, Op::identity(), total);
  }

  // One chunk of a longer sequence: `running` (the same in every thread)
  // holds everything before the chunk and goes in front of each result;
  // afterwards it also holds the chunk. Inclusive.
  template <int Items>
  __device__ __forceinline__ void inclusive_chunk(T (&items)[Items], T& running) {
    T total;
    scan_items<Items, true, false, false>(items, running, total);
    running = Op::combine(running, total);
  }

  // As inclusive_chunk, exclusive: item i gets `running` ∘ the chunk's
  // elements before it.
  template <int Items>
  __device__ __forceinline__ void exclusive_chunk(T (&items)[Items], T& running) {
    T total;
    scan_items<Items, false, false, false>(items, running, total);
    running = Op::combine(running, total);
  }

  // Reverse chunks, walked from the sequence's end: `running` holds
  // everything after the chunk and goes behind each result; afterwards it
  // also holds the chunk. Item i gets itself ∘ the chunk's elements after
  // it ∘ `running`.
  template <int Items>
  __device__ __forceinline__ void inclusive_reverse_chunk(T (&items)[Items], T& running) {
    T total;
    scan_items<Items, true, false, true>(items, running, total);
    running = Op::combine(total, running);
  }

  // As inclusive_reverse_chunk, exclusive: item i gets the chunk's
  // elements after it ∘ `running`.
  template <int Items>
  __device__ __forceinline__ void exclusive_reverse_chunk(T (&items)[Items], T& running) {
    T total;
    scan_items<Items, false, false, true>(items, running, total);
    running = Op::combine(total, running);
  }

 private:
  TempStorage& storage_;

  // Each thread reduces its items serially (in order), the block scans the
  // thread totals (from the end, Reverse), and each thread rescans its
  // items from what lies before (after) them, with `seed` in front (behind).
  // SeedIsIdentity: the seed is the identity, and is not combined.
  template <int Items, bool Inclusive, bool SeedIsIdentity, bool Reverse>
  __device__ __forceinline__ void scan_items(T (&items)[Items], const T seed, T& total) {
    T thread_total = items[0];
#pragma unroll
    for (int i = 1; i < Items; ++i) thread_total = Op::combine(thread_total, items[i]);
    // The edge thread: the first (forward) or the last (reverse), whose
    // block-level partial is the identity.
    const bool edge = threadIdx.x == (Reverse ? BlockThreads - 1 : 0);
    if constexpr (!Reverse) {
      // before: what goes in front of this thread's first item.
      T before = block_exclusive_scan<Op, warps>(thread_total, storage_.warp_totals, total);
      __syncthreads();
      if (!SeedIsIdentity) before = edge ? seed : Op::combine(seed, before);
      const bool identity_in_front = SeedIsIdentity && edge;
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const T item = items[i];
        const T through = identity_in_front && i == 0 ? item : Op::combine(before, item);
        items[i] = Inclusive ? through : before;
        before = through;
      }
    } else {
      // after: what goes behind this thread's last item.
      T after = block_exclusive_reverse_scan<Op, warps>(thread_total, storage_.warp_totals, total);
      __syncthreads();
      if (!SeedIsIdentity) after = edge ? seed : Op::combine(after, seed);
      const bool identity_behind = SeedIsIdentity && edge;
#pragma unroll
      for (int i = Items - 1; i >= 0; --i) {
        const T item = items[i];
        const T through = identity_behind && i == Items - 1 ? item : Op::combine(item, after);
        items[i] = Inclusive ? through : after;
        after = through;
      }
    }
  }
};

}  // namespace gpu_scan
