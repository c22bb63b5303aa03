// ---- Block level: one value per thread, from warp scans (chapter 1.6) ----
// Every warp scans its lanes and publishes its total; warp 0 scans the warp
// totals; each thread then puts the total of the warps before it in front of
// its own prefix. `warp_totals` is shared memory for $op_warps + 1 elements.
// All threads of the block must call it (it synchronises the block), and a
// second call must be separated from the first by a __syncthreads().

// Returns v_0 ∘ … ∘ v_(t-1) for thread t (thread 0: the identity) and the
// combination of all values in `block_total`.
__device__ __forceinline__ $op_t $op_block_exclusive_scan($op_t value, $op_t* warp_totals, $op_t& block_total) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  $op_t warp_total;
  const $op_t in_warp = $op_warp_exclusive_scan(value, warp_total);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    // Warp 0 turns the warp totals into warp prefixes (idle lanes hold the identity).
    const $op_t total = lane < $op_warps ? warp_totals[lane] : $op_identity();
    $op_t all_warps;
    const $op_t warp_prefix = $op_warp_exclusive_scan(total, all_warps);
    if (lane < $op_warps) warp_totals[lane] = warp_prefix;
    if (lane == 0) warp_totals[$op_warps] = all_warps;
  }
  __syncthreads();
  block_total = warp_totals[$op_warps];
  if (warp == 0) return in_warp;
  // Lane 0's in-warp prefix is the identity: skip combining with it.
  return lane == 0 ? warp_totals[warp] : $op_combine(warp_totals[warp], in_warp);
}

// Returns v_0 ∘ … ∘ v_t for thread t.
__device__ __forceinline__ $op_t $op_block_inclusive_scan($op_t value, $op_t* warp_totals, $op_t& block_total) {
  const $op_t prefix = $op_block_exclusive_scan(value, warp_totals, block_total);
  return threadIdx.x == 0 ? value : $op_combine(prefix, value);
}
