// ---- Warp level: Kogge-Stone scans across the 32 lanes (chapter 1.5, Fig. 1.8) ----
// After the step with offset d, lane i holds v_(i-2d+1) ∘ … ∘ v_i (clipped at
// lane 0). Each lane combines the *earlier* partial on the left, so the
// operator never needs to be commutative.
namespace gpu_scan {

// Lane i returns v_0 ∘ … ∘ v_i.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T warp_inclusive_scan(T value) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    const T earlier = scan_shfl_up(value, offset);
    if (lane >= offset) value = Op::combine(earlier, value);
  }
  return value;
}

// Lane i returns v_0 ∘ … ∘ v_(i-1) (lane 0: the identity); every lane
// receives the warp total v_0 ∘ … ∘ v_31 in `total`.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T warp_exclusive_scan(T value, T& total) {
  const T inclusive = warp_inclusive_scan<Op>(value);
  total = scan_shfl_idx(inclusive, 31);
  const T previous = scan_shfl_up(inclusive, 1);
  return (threadIdx.x & 31u) == 0 ? Op::identity() : previous;
}

}  // namespace gpu_scan
