// ---- Warp level: Kogge-Stone scans across the 32 lanes (chapter 1.5, Fig. 1.8) ----
// After the step with offset d, lane i holds v_(i-2d+1) ∘ … ∘ v_i (clipped at
// lane 0). Each lane combines the *earlier* partial on the left, so the
// operator never needs to be commutative.

// Lane i returns v_0 ∘ … ∘ v_i.
__device__ __forceinline__ $op_t $op_warp_inclusive_scan($op_t value) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    const $op_t earlier = scan_shfl_up(value, offset);
    if (lane >= offset) value = $op_combine(earlier, value);
  }
  return value;
}

// Lane i returns v_0 ∘ … ∘ v_(i-1) (lane 0: the identity); every lane
// receives the warp total v_0 ∘ … ∘ v_31 in `total`.
__device__ __forceinline__ $op_t $op_warp_exclusive_scan($op_t value, $op_t& total) {
  const $op_t inclusive = $op_warp_inclusive_scan(value);
  total = scan_shfl_idx(inclusive, 31);
  const $op_t previous = scan_shfl_up(inclusive, 1);
  return (threadIdx.x & 31u) == 0 ? $op_identity() : previous;
}
