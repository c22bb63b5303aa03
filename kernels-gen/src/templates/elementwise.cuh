// ---- Element-wise: the operator applied to pairs of elements ----
// output[i] = left[i] ∘ right[i] for every i < n: a zipped transform with
// the scan's operator, and the way the tests compare the translated
// `combine` with the Rust one on the device. A grid-stride loop over 64-bit
// indices, so any grid covers any n; each element is read before its
// output is written, so `output` may be `left` or `right`.
namespace gpu_scan {

template <class Op>
__device__ __forceinline__ void combine_pairs(const typename Op::T* left, const typename Op::T* right,
                                              typename Op::T* output, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    output[i] = Op::combine(left[i], right[i]);
  }
}

}  // namespace gpu_scan
