// ---- Block level: one value per thread, from warp scans (chapter 1.6) ----
// Every warp scans its lanes and publishes its total; warp 0 scans the warp
// totals; each thread then puts the total of the warps before it in front of
// its own prefix. The block has Warps full warps (a one-dimensional block of
// 32·Warps threads: Shape<Op>::warps for the library's tiles); `warp_totals`
// is shared memory for Warps + 1 elements. All threads of the block must
// call it (it synchronises the block), and a second call must be separated
// from the first by a __syncthreads().
namespace gpu_scan {

// Returns v_0 ∘ … ∘ v_(t-1) for thread t (thread 0: the identity) and the
// combination of all values in `block_total`.
template <class Op, int Warps, class T = typename Op::T>
__device__ __forceinline__ T block_exclusive_scan(T value, T* warp_totals, T& block_total) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  T warp_total;
  const T in_warp = warp_exclusive_scan<Op>(value, warp_total);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    // Warp 0 turns the warp totals into warp prefixes (idle lanes hold the identity).
    const T total = lane < Warps ? warp_totals[lane] : Op::identity();
    T all_warps;
    const T warp_prefix = warp_exclusive_scan<Op>(total, all_warps);
    if (lane < Warps) warp_totals[lane] = warp_prefix;
    if (lane == 0) warp_totals[Warps] = all_warps;
  }
  __syncthreads();
  block_total = warp_totals[Warps];
  if (warp == 0) return in_warp;
  // Lane 0's in-warp prefix is the identity: skip combining with it.
  return lane == 0 ? warp_totals[warp] : Op::combine(warp_totals[warp], in_warp);
}

// Returns v_0 ∘ … ∘ v_t for thread t.
template <class Op, int Warps, class T = typename Op::T>
__device__ __forceinline__ T block_inclusive_scan(T value, T* warp_totals, T& block_total) {
  const T prefix = block_exclusive_scan<Op, Warps>(value, warp_totals, block_total);
  return threadIdx.x == 0 ? value : Op::combine(prefix, value);
}

}  // namespace gpu_scan
