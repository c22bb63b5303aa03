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

// ---- Segment starts: every head's position, in order ----
// What a per-segment reduction over head flags or keys needs, whose number
// of segments only the device knows: starts[r], the position of segment r's
// head, and the count of segments. A compaction of the heads' positions
// (chapter 1.5's stream compaction, with the heads as the predicate), in
// three launches over chunks of SCAN_STARTS_CHUNK elements:
//  1. scan_count_heads_*: each chunk's heads, counted (a block a chunk);
//  2. scan_rank_head_chunks: those counts scanned in place, exclusively, by
//     one block: each chunk's first rank. The total is the count of
//     segments, stored in *count, and closes the starts: starts[count] = n.
//  3. scan_write_starts_*: each chunk's heads written at their ranks.
// Only starts[0 ..= capacity] are written: the caller's totals slot takes
// `capacity` segments (later ones are counted, not written), and
// starts[capacity] is where segment capacity - 1 ends.
// Element i of chunk c, row k (of SCAN_STARTS_ROWS) is
// c * SCAN_STARTS_CHUNK + k * SCAN_STARTS_THREADS + threadIdx.x: a warp's
// 32 answers are one ballot, and a chunk's heads in memory order are its
// ballots in (row, warp, lane) order.
#define SCAN_STARTS_THREADS 256
#define SCAN_STARTS_ROWS 16
#define SCAN_STARTS_CHUNK (SCAN_STARTS_THREADS * SCAN_STARTS_ROWS)
#define SCAN_STARTS_WARPS (SCAN_STARTS_THREADS / 32)
#define SCAN_RANK_THREADS 1024

// Whether element i starts a segment; element 0 always does.
struct byte_heads {
  const unsigned char* flags;
  __device__ __forceinline__ bool operator()(unsigned long long i) const { return i == 0 || flags[i] != 0; }
};

struct bit_heads {
  const unsigned* words;
  __device__ __forceinline__ bool operator()(unsigned long long i) const {
    return i == 0 || ((words[i >> 5] >> (unsigned)(i & 31u)) & 1u) != 0;
  }
};

template <class Key>
struct key_heads {
  const Key* keys;
  __device__ __forceinline__ bool operator()(unsigned long long i) const { return i == 0 || keys[i] != keys[i - 1]; }
};

// The heads of chunk c, one ballot a row (elements past n are not heads).
template <class Heads>
__device__ __forceinline__ void chunk_head_ballots(Heads heads, unsigned long long n, unsigned long long c,
                                                   unsigned (&ballots)[SCAN_STARTS_ROWS]) {
  const unsigned long long base = c * SCAN_STARTS_CHUNK + threadIdx.x;
#pragma unroll
  for (int k = 0; k < SCAN_STARTS_ROWS; ++k) {
    const unsigned long long i = base + (unsigned long long)k * SCAN_STARTS_THREADS;
    ballots[k] = __ballot_sync(0xffffffffu, i < n && heads(i));
  }
}

template <class Heads>
__device__ __forceinline__ void count_chunk_heads(Heads heads, unsigned long long n, unsigned long long* chunk_counts) {
  __shared__ unsigned warp_counts[SCAN_STARTS_WARPS];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x & 31u;
  const unsigned long long chunks = (n + SCAN_STARTS_CHUNK - 1) / SCAN_STARTS_CHUNK;
  // The loop bound is the block's, so every ballot and barrier is reached by all.
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    unsigned ballots[SCAN_STARTS_ROWS];
    chunk_head_ballots(heads, n, c, ballots);
    unsigned count = 0;
#pragma unroll
    for (int k = 0; k < SCAN_STARTS_ROWS; ++k) count += __popc(ballots[k]);
    if (lane == 0) warp_counts[warp] = count;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long total = 0;
      for (int w = 0; w < SCAN_STARTS_WARPS; ++w) total += warp_counts[w];
      chunk_counts[c] = total;
    }
    __syncthreads();
  }
}

// One block of SCAN_RANK_THREADS: 1024 counts a step, each step a warp
// scan, a scan of the 32 warps' sums, and the running total carried on.
__device__ __forceinline__ void rank_head_chunks(unsigned long long* chunk_counts, unsigned long long chunks,
                                                 unsigned long long n, unsigned long long* starts,
                                                 unsigned long long capacity, unsigned long long* count) {
  __shared__ unsigned long long warp_sums[SCAN_RANK_THREADS / 32];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x & 31u;
  unsigned long long running = 0;
  for (unsigned long long base = 0; base < chunks; base += SCAN_RANK_THREADS) {
    const unsigned long long c = base + threadIdx.x;
    const unsigned long long own = c < chunks ? chunk_counts[c] : 0;
    unsigned long long sum = own;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const unsigned long long up = __shfl_up_sync(0xffffffffu, sum, d);
      if ((int)lane >= d) sum += up;
    }
    if (lane == 31) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
      unsigned long long w = warp_sums[lane];
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const unsigned long long up = __shfl_up_sync(0xffffffffu, w, d);
        if ((int)lane >= d) w += up;
      }
      warp_sums[lane] = w;
    }
    __syncthreads();
    if (c < chunks) chunk_counts[c] = running + (warp > 0 ? warp_sums[warp - 1] : 0) + sum - own;
    running += warp_sums[SCAN_RANK_THREADS / 32 - 1];
    __syncthreads();  // every read of warp_sums before the next step's writes
  }
  if (threadIdx.x == 0) {
    *count = running;
    if (running <= capacity) starts[running] = n;
  }
}

template <class Heads>
__device__ __forceinline__ void write_chunk_starts(Heads heads, unsigned long long n, const unsigned long long* chunk_ranks,
                                                  unsigned long long* starts, unsigned long long capacity) {
  // Heads before each (row, warp) of the chunk: the ballots' counts,
  // scanned by the first warp, four a lane.
  __shared__ unsigned before[SCAN_STARTS_ROWS * SCAN_STARTS_WARPS];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x & 31u;
  const unsigned long long chunks = (n + SCAN_STARTS_CHUNK - 1) / SCAN_STARTS_CHUNK;
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    const unsigned long long first = chunk_ranks[c];
    if (first > capacity) continue;  // the whole block skips: nothing here is written
    unsigned ballots[SCAN_STARTS_ROWS];
    chunk_head_ballots(heads, n, c, ballots);
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < SCAN_STARTS_ROWS; ++k) before[k * SCAN_STARTS_WARPS + warp] = __popc(ballots[k]);
    }
    __syncthreads();
    if (warp == 0) {
      constexpr int per_lane = SCAN_STARTS_ROWS * SCAN_STARTS_WARPS / 32;
      unsigned own[per_lane];
      unsigned sum = 0;
#pragma unroll
      for (int j = 0; j < per_lane; ++j) {
        own[j] = before[lane * per_lane + j];
        sum += own[j];
      }
      unsigned scanned = sum;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const unsigned up = __shfl_up_sync(0xffffffffu, scanned, d);
        if ((int)lane >= d) scanned += up;
      }
      unsigned running = scanned - sum;
#pragma unroll
      for (int j = 0; j < per_lane; ++j) {
        before[lane * per_lane + j] = running;
        running += own[j];
      }
    }
    __syncthreads();
    const unsigned below = (1u << lane) - 1u;  // the lanes before this one
    const unsigned long long base = c * SCAN_STARTS_CHUNK + threadIdx.x;
#pragma unroll
    for (int k = 0; k < SCAN_STARTS_ROWS; ++k) {
      if ((ballots[k] >> lane) & 1u) {
        const unsigned long long rank = first + before[k * SCAN_STARTS_WARPS + warp] + __popc(ballots[k] & below);
        if (rank <= capacity) starts[rank] = base + (unsigned long long)k * SCAN_STARTS_THREADS;
      }
    }
    __syncthreads();  // every read of `before` before the next chunk's writes
  }
}

#define SCAN_STARTS_KERNELS(NAME, HEADS, ARG)                                                                              \
  extern "C" __global__ void __launch_bounds__(SCAN_STARTS_THREADS)                                                     \
      scan_count_heads_##NAME(const void* heads, unsigned long long n, unsigned long long* chunk_counts) {              \
    count_chunk_heads(HEADS{(ARG)heads}, n, chunk_counts);                                                                \
  }                                                                                                                      \
  extern "C" __global__ void __launch_bounds__(SCAN_STARTS_THREADS)                                                     \
      scan_write_starts_##NAME(const void* heads, unsigned long long n, const unsigned long long* chunk_ranks,            \
                               unsigned long long* starts, unsigned long long capacity) {                               \
    write_chunk_starts(HEADS{(ARG)heads}, n, chunk_ranks, starts, capacity);                                             \
  }
SCAN_STARTS_KERNELS(bytes, byte_heads, const unsigned char*)
SCAN_STARTS_KERNELS(bits, bit_heads, const unsigned*)
SCAN_STARTS_KERNELS(keys8, key_heads<unsigned char>, const unsigned char*)
SCAN_STARTS_KERNELS(keys16, key_heads<unsigned short>, const unsigned short*)
SCAN_STARTS_KERNELS(keys32, key_heads<unsigned int>, const unsigned int*)
SCAN_STARTS_KERNELS(keys64, key_heads<unsigned long long>, const unsigned long long*)

extern "C" __global__ void __launch_bounds__(SCAN_RANK_THREADS)
    scan_rank_head_chunks(unsigned long long* chunk_counts, unsigned long long chunks, unsigned long long n,
                          unsigned long long* starts, unsigned long long capacity, unsigned long long* count) {
  rank_head_chunks(chunk_counts, chunks, n, starts, capacity, count);
}

// A count the host knows, stored where a scan's caller asked for it, in
// stream order (a scan over rows or offsets, or without segments).
extern "C" __global__ void scan_store_count(unsigned long long* slot, unsigned long long value) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *slot = value;
}
