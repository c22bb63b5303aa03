// ---- Device API: an operator's scans inside your own kernels ----
// `gpu_scan::DeviceApi` hands this header out after the operator's policy
// (struct gpu_scan_ops::<name>, with T, identity() and combine(x, y)). All
// functions use threadIdx.x alone: launch one-dimensional blocks.
//
//   Warp level (warp.cuh; all 32 lanes of the warp call it, no shared memory):
//     T gpu_scan::warp_inclusive_scan<Op>(T v)             lane i: v_0 ∘ … ∘ v_i
//     T gpu_scan::warp_exclusive_scan<Op>(T v, T& total)   lane i: v_0 ∘ … ∘ v_(i-1)
//   Block level: gpu_scan::BlockScan<Op, BlockThreads> below.
namespace gpu_scan {

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

  // Thread t gets v_0 ∘ … ∘ v_t; every thread gets v_0 ∘ … ∘ v_(B-1) in `total`.
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

  // The block's Items · BlockThreads elements in blocked order, scanned in
  // place (inclusive); `total` receives all of them combined.
  template <int Items>
  __device__ __forceinline__ void inclusive(T (&items)[Items], T& total) {
    scan_items<Items, true, true>(items, Op::identity(), total);
  }

  // As above, exclusive: item i gets the elements before it (the identity first).
  template <int Items>
  __device__ __forceinline__ void exclusive(T (&items)[Items], T& total) {
    scan_items<Items, false, true>(items, Op::identity(), total);
  }

  // One chunk of a longer sequence: `running` (the same in every thread)
  // holds everything before the chunk and goes in front of each result;
  // afterwards it also holds the chunk. Inclusive.
  template <int Items>
  __device__ __forceinline__ void inclusive_chunk(T (&items)[Items], T& running) {
    T total;
    scan_items<Items, true, false>(items, running, total);
    running = Op::combine(running, total);
  }

  // As inclusive_chunk, exclusive: item i gets `running` ∘ the chunk's
  // elements before it.
  template <int Items>
  __device__ __forceinline__ void exclusive_chunk(T (&items)[Items], T& running) {
    T total;
    scan_items<Items, false, false>(items, running, total);
    running = Op::combine(running, total);
  }

 private:
  TempStorage& storage_;

  // Each thread reduces its items serially (in order), the block scans the
  // thread totals, and each thread rescans its items from its prefix with
  // `seed` in front (SeedIsIdentity: the seed is the identity, and is not
  // combined).
  template <int Items, bool Inclusive, bool SeedIsIdentity>
  __device__ __forceinline__ void scan_items(T (&items)[Items], const T seed, T& total) {
    T thread_total = items[0];
#pragma unroll
    for (int i = 1; i < Items; ++i) thread_total = Op::combine(thread_total, items[i]);
    T thread_prefix = block_exclusive_scan<Op, warps>(thread_total, storage_.warp_totals, total);
    __syncthreads();
    if (!SeedIsIdentity) thread_prefix = threadIdx.x == 0 ? seed : Op::combine(seed, thread_prefix);
    // thread_prefix: what goes in front of this thread's first item.
    const bool identity_in_front = SeedIsIdentity && threadIdx.x == 0;
    T running = thread_prefix;
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const T item = items[i];
      const T through = identity_in_front && i == 0 ? item : Op::combine(running, item);
      items[i] = Inclusive ? through : running;
      running = through;
    }
  }
};

}  // namespace gpu_scan
