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

// ---- Segment starts: every head's position, in order ----
// What a per-segment reduction over head flags or keys needs, whose number
// of segments only the device knows: starts[r], the position of segment r's
// head, and the count of segments. A compaction of the heads' positions
// (chapter 1.5's stream compaction, the heads as the predicate) in one pass
// with decoupled look-back (Merrill & Garland 2016), reading the heads
// once: each block takes the next chunk of SCAN_STARTS_CHUNK elements (a
// ticket, so that every chunk it waits on is already running), counts its
// heads (SCAN_STARTS_RUN consecutive elements a thread, as a bit mask),
// publishes the count, sums its predecessors' counts into its first rank,
// publishes that, and writes each head's position at its rank. The last
// chunk stores the count of segments and closes the starts
// (starts[count] = n). Only starts[0 ..= capacity] are written: the
// caller's totals slot takes `capacity` segments (later ones are counted,
// not written), and starts[capacity] is where segment capacity - 1 ends.
// status holds chunks + 1 words, zeroed by the host before the launch: a
// word per chunk, (state << 62) | value, and the ticket counter last.
#define SCAN_STARTS_THREADS 256
#define SCAN_STARTS_RUN 16
#define SCAN_STARTS_CHUNK (SCAN_STARTS_THREADS * SCAN_STARTS_RUN)
#define SCAN_STARTS_AGGREGATE (1ull << 62)  // the chunk's own count
#define SCAN_STARTS_PREFIX (2ull << 62)     // the count up to and with the chunk
#define SCAN_STARTS_VALUE ((1ull << 62) - 1)

// SCAN_STARTS_RUN elements from `start` (zeros past n): 16-byte loads
// where the run is whole and aligned.
template <class T>
__device__ __forceinline__ void load_run(const T* p, unsigned long long start, unsigned long long n,
                                         T (&run)[SCAN_STARTS_RUN]) {
  constexpr int vectors = SCAN_STARTS_RUN * sizeof(T) / 16;
  if (start + SCAN_STARTS_RUN <= n && ((unsigned long long)(p + start) & 15u) == 0) {
    uint4 v[vectors];
#pragma unroll
    for (int k = 0; k < vectors; ++k) v[k] = __ldcs(reinterpret_cast<const uint4*>(p + start) + k);
    memcpy(run, v, sizeof(run));
  } else {
#pragma unroll
    for (int k = 0; k < SCAN_STARTS_RUN; ++k) run[k] = start + k < n ? p[start + k] : T(0);
  }
}

// Bit k of a run's mask: element start + k starts a segment (element 0
// always does; elements past n do not).
__device__ __forceinline__ unsigned clip_run(unsigned mask, unsigned long long start, unsigned long long n) {
  if (start == 0) mask |= 1u;
  if (start + SCAN_STARTS_RUN > n) mask &= start < n ? (1u << (unsigned)(n - start)) - 1u : 0u;
  return mask;
}

// Byte flags: non-zero marks a head.
struct byte_runs {
  const unsigned char* flags;
  __device__ __forceinline__ unsigned mask(unsigned long long start, unsigned long long n) const {
    unsigned char run[SCAN_STARTS_RUN];
    load_run(flags, start, n, run);
    unsigned mask = 0;
#pragma unroll
    for (int k = 0; k < SCAN_STARTS_RUN; ++k) mask |= (unsigned)(run[k] != 0) << k;
    return clip_run(mask, start, n);
  }
  // Element 0's own flag (find_edges).
  __device__ __forceinline__ void marks(unsigned long long, unsigned long long* out) const { out[0] = flags[0] != 0; }
};

// Bit flags: a run is half a word (runs start at multiples of 16).
struct bit_runs {
  const unsigned* words;
  __device__ __forceinline__ unsigned mask(unsigned long long start, unsigned long long n) const {
    const unsigned word = start < n ? __ldcs(words + (start >> 5)) : 0u;
    return clip_run((word >> (unsigned)(start & 16u)) & 0xffffu, start, n);
  }
  __device__ __forceinline__ void marks(unsigned long long, unsigned long long* out) const { out[0] = words[0] & 1u; }
};

// Keys: element i starts a segment where keys[i] != keys[i - 1].
template <class Key>
struct key_runs {
  const Key* keys;
  __device__ __forceinline__ unsigned mask(unsigned long long start, unsigned long long n) const {
    Key run[SCAN_STARTS_RUN];
    load_run(keys, start, n, run);
    Key before = start > 0 && start < n ? keys[start - 1] : run[0];
    unsigned mask = 0;
#pragma unroll
    for (int k = 0; k < SCAN_STARTS_RUN; ++k) {
      mask |= (unsigned)(run[k] != before) << k;
      before = run[k];
    }
    return clip_run(mask, start, n);
  }
  // The keys at both ends, zero-extended.
  __device__ __forceinline__ void marks(unsigned long long n, unsigned long long* out) const {
    out[0] = (unsigned long long)keys[0];
    out[1] = (unsigned long long)keys[n - 1];
  }
};

// Warp 0 of chunk c (> 0) sums its predecessors' counts, 32 at a time, up
// to the nearest published prefix, waiting for each to publish something.
__device__ __forceinline__ unsigned long long look_back_starts(unsigned long long* status, unsigned long long c) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned long long before = 0;
  long long last = (long long)c - 1;  // the nearest predecessor not yet summed
  while (true) {
    const long long at = last - (long long)lane;
    unsigned long long word = SCAN_STARTS_PREFIX;  // before chunk 0: nothing
    if (at >= 0) {
      do {
        word = *(volatile unsigned long long*)(status + at);
      } while (word == 0);
    }
    const unsigned prefixes = __ballot_sync(0xffffffffu, (word & ~SCAN_STARTS_VALUE) == SCAN_STARTS_PREFIX);
    // Lanes up to the first prefix (the nearest) count; the rest are behind it.
    const unsigned stop = prefixes ? (unsigned)__ffs(prefixes) - 1u : 31u;
    unsigned long long value = lane <= stop ? word & SCAN_STARTS_VALUE : 0;
#pragma unroll
    for (int d = 16; d > 0; d /= 2) value += __shfl_xor_sync(0xffffffffu, value, d);
    before += value;
    if (prefixes) return before;
    last -= 32;
  }
}

template <class Runs>
__device__ __forceinline__ void find_starts(Runs runs, unsigned long long n, unsigned long long* status,
                                            unsigned long long* starts, unsigned long long capacity,
                                            unsigned long long* count) {
  __shared__ unsigned long long chunk_shared, first_shared;
  __shared__ unsigned warp_counts[SCAN_STARTS_THREADS / 32];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x & 31u;
  const unsigned long long chunks = (n + SCAN_STARTS_CHUNK - 1) / SCAN_STARTS_CHUNK;
  if (threadIdx.x == 0) chunk_shared = atomicAdd(status + chunks, 1ull);
  __syncthreads();
  const unsigned long long c = chunk_shared;
  const unsigned long long start = c * SCAN_STARTS_CHUNK + (unsigned long long)threadIdx.x * SCAN_STARTS_RUN;
  const unsigned mask = runs.mask(start, n);
  // The heads before this thread's run within the chunk.
  const unsigned own = __popc(mask);
  unsigned within = own;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const unsigned up = __shfl_up_sync(0xffffffffu, within, d);
    if ((int)lane >= d) within += up;
  }
  if (lane == 31) warp_counts[warp] = within;
  __syncthreads();
  unsigned chunk_count = 0, before_warp = 0;
#pragma unroll
  for (int w = 0; w < SCAN_STARTS_THREADS / 32; ++w) {
    if (w < (int)warp) before_warp += warp_counts[w];
    chunk_count += warp_counts[w];
  }
  within += before_warp - own;
  if (warp == 0) {
    unsigned long long first = 0;
    if (c == 0) {
      if (lane == 0) atomicExch(status + c, SCAN_STARTS_PREFIX | chunk_count);
    } else {
      if (lane == 0) atomicExch(status + c, SCAN_STARTS_AGGREGATE | chunk_count);
      first = look_back_starts(status, c);
      if (lane == 0) atomicExch(status + c, SCAN_STARTS_PREFIX | (first + chunk_count));
    }
    if (lane == 0) {
      first_shared = first;
      if (c == chunks - 1) {
        const unsigned long long total = first + chunk_count;
        *count = total;
        if (total <= capacity) starts[total] = n;
      }
    }
  }
  __syncthreads();
  unsigned long long rank = first_shared + within;
  for (unsigned bits = mask; bits != 0 && rank <= capacity; bits &= bits - 1u, ++rank) {
    starts[rank] = start + (unsigned)(__ffs(bits) - 1);
  }
}

// ---- A shard's edges: what a scan across ranks needs of its segments ----
// Where a shard of a sequence split across ranks (issue 49) has heads other
// than its element 0, and how it meets its neighbours: edges[0] the first
// element i >= 1 that starts a segment (atomicMin: ~0 on entry, the host
// sets it), edges[1] the last (atomicMax: 0 on entry, which no head >= 1
// is), edges[2] element 0's own mark (a non-zero flag) or its key's bits,
// edges[3] the last key's bits (keys only); over offsets, two counts
// (scan_offset_edges). n > 0; edges[2] and edges[3] are 0 on entry.
__device__ __forceinline__ void publish_edges(unsigned long long lo, unsigned long long hi, unsigned long long* edges) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, d));
  }
  if ((threadIdx.x & 31u) == 0) {
    if (lo != ~0ull) atomicMin(edges, lo);
    if (hi != 0) atomicMax(edges + 1, hi);
  }
}

template <class Runs>
__device__ __forceinline__ void find_edges(Runs runs, unsigned long long n, unsigned long long* edges) {
  unsigned long long lo = ~0ull, hi = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * SCAN_STARTS_RUN;
  for (unsigned long long start = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * SCAN_STARTS_RUN;
       start < n; start += stride) {
    unsigned mask = runs.mask(start, n);
    if (start == 0) mask &= ~1u;  // element 0 aside: its own mark is edges[2]
    if (mask != 0) {
      lo = min(lo, start + (unsigned)(__ffs(mask) - 1));
      hi = max(hi, start + (unsigned)(31 - __clz(mask)));
    }
  }
  publish_edges(lo, hi, edges);
  if (blockIdx.x == 0 && threadIdx.x == 0) runs.marks(n, edges + 2);
}

// Over offsets, edges[2] counts the offsets equal to 0 (element 0 is marked
// where there is one) and edges[3] those below n: where the windows that
// hold the shard's first and last elements are.
template <class Offset>
__device__ __forceinline__ void scan_offset_edges(const Offset* offsets, unsigned long long count, unsigned long long n,
                                                  unsigned long long* edges) {
  unsigned long long lo = ~0ull, hi = 0, zeros = 0, below = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < count; r += stride) {
    const unsigned long long o = offsets[r];
    zeros += o == 0;
    below += o < n;
    if (o >= 1 && o < n) {
      lo = min(lo, o);
      hi = max(hi, o);
    }
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    zeros += __shfl_xor_sync(0xffffffffu, zeros, d);
    below += __shfl_xor_sync(0xffffffffu, below, d);
  }
  if ((threadIdx.x & 31u) == 0) {
    if (zeros != 0) atomicAdd(edges + 2, zeros);
    if (below != 0) atomicAdd(edges + 3, below);
  }
  publish_edges(lo, hi, edges);
}

// A count the host knows, stored where a scan's caller asked for it, in
// stream order (a scan over rows or offsets, or without segments).
__device__ __forceinline__ void scan_store_count_at(unsigned long long* slot, unsigned long long value) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *slot = value;
}
