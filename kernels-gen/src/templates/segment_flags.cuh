// ===========================================================================
// gpu-scan: segment head flags from offsets and from keys.
// ===========================================================================
// Flags are bytes (non-zero marks a head) or bits packed into 32-bit words
// (element i is bit i % 32 of word i / 32). Element 0 always starts a
// segment. Every kernel walks its input with a grid-stride loop, so any
// grid size is correct.

// From segment start offsets (CSR row pointers): element offsets[r] starts a
// segment. Offsets >= n (the closing n of a row-pointer array, trailing
// empty segments) are skipped; repeated offsets (empty segments) mark the
// same head. The flags must be zero on entry: the host clears them first.
template <class Offset>
__device__ __forceinline__ void scan_heads_from_offsets_bytes(const Offset* offsets, unsigned long long count, unsigned char* flags, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < count; r += stride) {
    const unsigned long long o = offsets[r];
    if (o < n) flags[o] = 1;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && n > 0) flags[0] = 1;
}

template <class Offset>
__device__ __forceinline__ void scan_heads_from_offsets_bits(const Offset* offsets, unsigned long long count, unsigned* words, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < count; r += stride) {
    const unsigned long long o = offsets[r];
    // Several offsets may share a word: set the bit atomically.
    if (o < n) atomicOr(&words[o >> 5], 1u << (unsigned)(o & 31u));
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && n > 0) atomicOr(&words[0], 1u);
}

// Checks that offsets are the row pointers of n elements before any flag is
// written: none past n (n itself closes the array), none smaller than the one
// before it. first_bad, ~0 on entry (the host sets it), receives the
// smallest index that breaks either rule; the host reads the offsets there to
// say which.
template <class Offset>
__device__ __forceinline__ void scan_check_offsets(const Offset* offsets, unsigned long long count, unsigned long long n,
                                                   unsigned long long* first_bad) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < count; r += stride) {
    const unsigned long long o = offsets[r];
    if (o > n || (r > 0 && o < (unsigned long long)offsets[r - 1])) atomicMin(first_bad, r);
  }
}

// The index of checked offsets that the segmented scans over offsets read:
// index[j] is the first r with offsets[r] >= j << shift (count where none
// is), for j = 0 … ceil(n / 2^shift), as an Entry (32 bits where count
// fits). The offsets of elements [a, b) then lie in
// [index[a >> shift], index[((b - 1) >> shift) + 1]).
template <class Offset, class Entry>
__device__ __forceinline__ void scan_index_offsets(const Offset* offsets, unsigned long long count, unsigned long long n,
                                                   unsigned long long shift, Entry* index) {
  const unsigned long long entries = ((n + (1ull << shift) - 1) >> shift) + 1;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < entries; j += stride) {
    const unsigned long long x = j << shift;
    unsigned long long lo = 0, hi = count;
    while (lo < hi) {
      const unsigned long long mid = lo + (hi - lo) / 2;
      if ((unsigned long long)offsets[mid] < x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    index[j] = (Entry)lo;
  }
}

// From keys, compared bit for bit as unsigned integers of the key's size:
// element i starts a segment where keys[i] != keys[i - 1].
template <class Key>
__device__ __forceinline__ void scan_heads_from_keys_bytes(const Key* keys, unsigned char* flags, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    flags[i] = i == 0 || keys[i] != keys[i - 1];
  }
}

// One warp builds one word per step: lane l compares element 32·w + l with
// its predecessor and a ballot packs the 32 answers.
template <class Key>
__device__ __forceinline__ void scan_heads_from_keys_bits(const Key* keys, unsigned* words, unsigned long long n) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned long long warps = (unsigned long long)gridDim.x * (blockDim.x / 32);
  const unsigned long long num_words = (n + 31) / 32;
  // The loop bound is the same for the whole warp, so the ballot is never divergent.
  for (unsigned long long w = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; w < num_words; w += warps) {
    const unsigned long long i = w * 32 + lane;
    const bool head = i < n && (i == 0 || keys[i] != keys[i - 1]);
    const unsigned word = __ballot_sync(0xffffffffu, head);
    if (lane == 0) words[w] = word;
  }
}

#define SCAN_OFFSET_KERNELS(BITS, T)                                                                                              \
  extern "C" __global__ void scan_heads_from_offsets##BITS##_bytes(const T* offsets, unsigned long long count, unsigned char* flags, \
                                                                   unsigned long long n) {                                        \
    scan_heads_from_offsets_bytes(offsets, count, flags, n);                                                                      \
  }                                                                                                                               \
  extern "C" __global__ void scan_heads_from_offsets##BITS##_bits(const T* offsets, unsigned long long count, unsigned* words,     \
                                                                  unsigned long long n) {                                         \
    scan_heads_from_offsets_bits(offsets, count, words, n);                                                                       \
  }                                                                                                                               \
  extern "C" __global__ void scan_check_offsets##BITS(const T* offsets, unsigned long long count, unsigned long long n,           \
                                                    unsigned long long* first_bad) {                                              \
    scan_check_offsets(offsets, count, n, first_bad);                                                                             \
  }                                                                                                                               \
  extern "C" __global__ void scan_index_offsets##BITS##_32(const T* offsets, unsigned long long count, unsigned long long n,      \
                                                         unsigned long long shift, unsigned* index) {                             \
    scan_index_offsets(offsets, count, n, shift, index);                                                                          \
  }                                                                                                                               \
  extern "C" __global__ void scan_index_offsets##BITS##_64(const T* offsets, unsigned long long count, unsigned long long n,      \
                                                         unsigned long long shift, unsigned long long* index) {                   \
    scan_index_offsets(offsets, count, n, shift, index);                                                                          \
  }
SCAN_OFFSET_KERNELS(32, unsigned int)
SCAN_OFFSET_KERNELS(64, unsigned long long)

#define SCAN_KEY_KERNELS(BITS, T)                                                                                        \
  extern "C" __global__ void scan_heads_from_keys##BITS##_bytes(const T* keys, unsigned char* flags, unsigned long long n) { \
    scan_heads_from_keys_bytes(keys, flags, n);                                                                          \
  }                                                                                                                      \
  extern "C" __global__ void scan_heads_from_keys##BITS##_bits(const T* keys, unsigned* words, unsigned long long n) {     \
    scan_heads_from_keys_bits(keys, words, n);                                                                           \
  }
SCAN_KEY_KERNELS(8, unsigned char)
SCAN_KEY_KERNELS(16, unsigned short)
SCAN_KEY_KERNELS(32, unsigned int)
SCAN_KEY_KERNELS(64, unsigned long long)
