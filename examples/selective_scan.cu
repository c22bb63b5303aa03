// The selective scan of examples/selective_scan.rs: a Mamba-style linear
// recurrence per channel and state, scanned with the block scan of the
// Rust operator `Affine`. The program in front names its policy `Op` and
// defines THREADS (per block), ITEMS (steps per thread in a chunk) and STATES.
constexpr int CHUNK = THREADS * ITEMS;
typedef Op::T Map;

// One block per channel. Thread t owns steps base + t·ITEMS … + ITEMS − 1 of
// each chunk (the block scan's "blocked" order).
extern "C" __global__ void __launch_bounds__(THREADS) selective_scan(
    const float* x, const float* delta, const float* A, const float* B, const float* C, float* y, unsigned length) {
  typedef gpu_scan::BlockScan<Op, THREADS> Scan;
  __shared__ Scan::TempStorage storage;
  const unsigned long long row = (unsigned long long)blockIdx.x * length;
  // Each state's map from the sequence's start to the end of the last chunk.
  Map running[STATES];
#pragma unroll
  for (int n = 0; n < STATES; ++n) running[n] = Op::identity();
  for (unsigned base = 0; base < length; base += CHUNK) {
    const unsigned first = base + threadIdx.x * ITEMS;
    float xs[ITEMS], dts[ITEMS], out[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const bool valid = first + i < length;
      xs[i] = valid ? x[row + first + i] : 0.0f;
      dts[i] = valid ? delta[row + first + i] : 0.0f;
      out[i] = 0.0f;
    }
#pragma unroll
    for (int n = 0; n < STATES; ++n) {
      const float a_n = A[blockIdx.x * STATES + n];
      Map maps[ITEMS];
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const unsigned t = first + i;
        if (t < length) {
          maps[i].a = expf(dts[i] * a_n);
          maps[i].b = dts[i] * B[t * STATES + n] * xs[i];
        } else {
          maps[i] = Op::identity();
        }
      }
      // maps[i] becomes running[n] ∘ the chunk's maps up to step i, and
      // running[n] takes in the whole chunk.
      Scan(storage).inclusive_chunk(maps, running[n]);
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        if (first + i < length) out[i] += C[(first + i) * STATES + n] * maps[i].b;
      }
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      if (first + i < length) y[row + first + i] = out[i];
    }
  }
}
