// ---- Heads from offsets, found by each thread ----
// (A segment source of segments.cuh: segment_offsets.)
namespace gpu_scan {

// Offset r of `o`.
__device__ __forceinline__ unsigned long long offset_at(const scan_offsets& o, unsigned long long r) {
  return o.width == 4 ? (unsigned long long)__ldg((const unsigned*)o.offsets + r) : __ldg((const unsigned long long*)o.offsets + r);
}

// The first r in [lo, hi) with offsets[r] >= x, searched by one lane.
__device__ __forceinline__ unsigned long long lane_lower_bound(const scan_offsets& o, unsigned long long x, unsigned long long lo, unsigned long long hi) {
  while (lo < hi) {
    const unsigned long long mid = lo + (hi - lo) / 2;
    if (offset_at(o, mid) < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Entry j of the offsets' index.
__device__ __forceinline__ unsigned long long index_at(const scan_offsets& o, unsigned long long j) {
  return o.index_width == 4 ? (unsigned long long)__ldg((const unsigned*)o.index + j) : __ldg((const unsigned long long*)o.index + j);
}

// The head flags the offsets give elements start … start + count - 1
// (count at most 64, possibly 0): bit i when some offset equals start + i.
// The index bounds the window's offsets to those of the index strides it
// touches: [lo, hi), known after two independent loads. A short run is
// walked whole, its loads independent of each other (no chain of
// dependent loads as in a search); a long one (dense heads, or runs of
// empty segments) is searched for the window's first offset and walked
// from there, repeats skipped by one more search. So a thread's work is
// about the number of offsets near its window, whatever the segments'
// lengths, and its latency two or three loads.
// Mask: unsigned for windows of at most 32 elements (fewer registers),
// unsigned long long for up to 64.
template <class Mask>
__device__ __forceinline__ Mask offsets_window(const scan_offsets& o, unsigned long long start, int count) {
  Mask bits = 0;
  if (count <= 0) return bits;
  const unsigned long long end = start + (unsigned long long)count;
  const unsigned long long lo = index_at(o, start >> o.index_shift);
  const unsigned long long hi = index_at(o, ((end - 1) >> o.index_shift) + 1);
  if (hi - lo <= 128) {
    // Two loads in flight at a time (four made ptxas spill a few bytes in
    // the single pass of the smallest tiles, at its register cap).
#pragma unroll 2
    for (unsigned long long r = lo; r < hi; ++r) {
      // Offsets before the window wrap around to large distances.
      const unsigned long long distance = offset_at(o, r) - start;
      if (distance < (unsigned long long)count) bits |= (Mask)1 << (unsigned)distance;
    }
    return bits;
  }
  unsigned long long r = lane_lower_bound(o, start, lo, hi);
  while (r < hi) {
    const unsigned long long at = offset_at(o, r);
    if (at >= end) break;
    bits |= (Mask)1 << (unsigned)(at - start);
    ++r;
    if (r < hi && offset_at(o, r) == at) r = lane_lower_bound(o, at + 1, r, hi);
  }
  return bits;
}

// The head bit of an offset `distance` elements into a tile of `valid`
// (none for an offset before the tile, whose distance wraps around to a
// large one, or past it).
template <class Distance>
__device__ __forceinline__ void or_head_bit(Distance distance, int valid, unsigned* words) {
  if (distance < (Distance)valid) atomicOr(words + (distance >> 5), 1u << (unsigned)(distance & 31u));
}

// One 16-byte chunk of offsets (4 of 32 bits or 2 of 64, ascending) into
// a tile's head bits: the bit of each one within [base, base + valid), one
// shared-memory atomic each, straight-line code. An offset outside the
// tile ORs nothing into `spare` (the lane's own word) instead of skipping
// its atomic: ptxas puts a branch and a convergence barrier around an
// atomic under an `if`, even a predicated `red`. The heads warps'
// instructions slow the whole block: a lane's loop over 8 chunks of
// 32-bit offsets is 356 instructions (sm_90), against 597 with 56
// convergence barriers when each chunk's bits were first merged per word
// (one atomic per word, the lanes diverging where words change). Power-law
// lengths went from 90.3% to 95.6% of copy speed, mean length 2 from 52%
// to 74% (H100, 2^28, BENCHMARKS.md).
// Distance: the type distances from the tile are computed in, 32 bits
// where offsets of 32 bits meet a tile below 2^32 (warp_offsets_words).
template <class Offset, class Distance>
__device__ __forceinline__ void or_chunk_heads(const uint4& chunk, Distance base, int valid, unsigned* words, unsigned* spare) {
  constexpr int per_chunk = 16 / sizeof(Offset);
  Offset at[per_chunk];
  memcpy(at, &chunk, 16);
#pragma unroll
  for (int j = 0; j < per_chunk; ++j) {
    // Offsets before the tile wrap around to large distances.
    const Distance distance = (Distance)at[j] - base;
    const bool in_tile = distance < (Distance)valid;
    atomicOr(in_tile ? words + (unsigned)(distance >> 5) : spare, in_tile ? 1u << (unsigned)(distance & 31u) : 0u);
  }
}

// A 16-byte chunk of offsets that sets no head bit of the tile at `base`:
// every offset base - 1, whose distance wraps around to the largest.
template <class Offset>
__device__ __forceinline__ uint4 no_heads_chunk(unsigned long long base) {
  constexpr int per_chunk = 16 / sizeof(Offset);
  Offset at[per_chunk];
#pragma unroll
  for (int j = 0; j < per_chunk; ++j) at[j] = (Offset)(base - 1ull);
  uint4 chunk;
  memcpy(&chunk, at, 16);
  return chunk;
}

// Offsets [lo, hi) of a 16-byte aligned array into a tile's head bits, by
// one warp: the whole 16-byte chunks from the one holding `lo` up to `hi`,
// each lane `group` chunks in flight at once (8 × 32 lanes: 1,024 offsets
// of 32 bits), then the few offsets after the last whole chunk one by
// one. A chunk's offsets before `lo` lie before the tile (the index says
// so); none past `hi` is read, so no read leaves the array. (With the
// per-word merge of or_chunk_heads' earlier version, 16 chunks a lane ran
// dense offsets faster but means of 16 to 1024 slower, 79-89% of copy
// speed against 85-92%; 4 chunks ran power-law lengths at 73.5% against
// 77%: H200, 2^28.)
template <class Offset, class Distance>
__device__ __forceinline__ void warp_offsets_chunks(const Offset* offsets, unsigned long long lo, unsigned long long hi, Distance base, int valid,
                                                    unsigned* words, unsigned* spare) {
  constexpr unsigned long long per_chunk = 16 / sizeof(Offset);
  constexpr int group = 8;
  const unsigned lane = threadIdx.x & 31u;
  const uint4* chunks = reinterpret_cast<const uint4*>(offsets);
  const unsigned long long whole = hi / per_chunk;  // chunks [lo / per_chunk, whole) are whole and below hi
  const uint4 none = no_heads_chunk<Offset>((unsigned long long)base);
  for (unsigned long long c = lo / per_chunk + lane; c < whole; c += 32ull * group) {
    // Chunks past `whole` set nothing, without a branch around them.
    uint4 chunk[group];
#pragma unroll
    for (int g = 0; g < group; ++g) {
      chunk[g] = none;
      if (c + 32ull * g < whole) chunk[g] = __ldg(chunks + c + 32ull * g);
    }
#pragma unroll
    for (int g = 0; g < group; ++g) or_chunk_heads<Offset, Distance>(chunk[g], base, valid, words, spare);
  }
  const unsigned long long tail = whole * per_chunk > lo ? whole * per_chunk : lo;
  if (tail + lane < hi) {
    or_head_bit<Distance>((Distance)__ldg(offsets + tail + lane) - base, valid, words);
  }
}

// A whole tile's head bits from the offsets, found by one warp: bit j of
// `words` (TileItems bits) for tile element j (element base + j, j below
// `valid`) where some offset equals base + j; the rest of the words are
// zeroed. The index bounds the tile's offsets to [lo, hi) after two loads
// (one lane each); the lanes then read them 16 bytes at a time, 1,024
// offsets of 32 bits in flight per warp, so that a tile's offsets cost a
// round trip to memory per 1,024 (one offset a lane, 128 in flight, took
// one per 128: power-law lengths, a thousand offsets in some tiles, ran at
// 19% of copy speed). Offsets not 16-byte aligned are read one per lane.
// Repeated offsets set one bit. A long span of offsets (runs of empty
// segments) is searched per 32-element word instead (offsets_window), so
// the work follows the number of distinct heads. Element 0's head is the
// reader's to add.
template <int TileItems>
__device__ __forceinline__ void warp_offsets_words(const scan_offsets& o, unsigned long long base, int valid, unsigned* words) {
  constexpr int word_count = (TileItems + 31) / 32;
  const unsigned lane = threadIdx.x & 31u;
  for (int w = (int)lane; w < word_count; w += 32) words[w] = 0u;
  if (valid <= 0) return;
  const unsigned long long end = base + (unsigned long long)valid;
  unsigned long long bound = 0;
  if (lane == 0) bound = index_at(o, base >> o.index_shift);
  if (lane == 1) bound = index_at(o, ((end - 1) >> o.index_shift) + 1);
  const unsigned long long lo = __shfl_sync(0xffffffffu, bound, 0);
  const unsigned long long hi = __shfl_sync(0xffffffffu, bound, 1);
  __syncwarp();  // the zeros before any bit
  if (hi - lo <= 64ull * (unsigned long long)word_count) {
    // The word each lane ORs nothing into where an offset lies outside
    // the tile (or_chunk_heads): the lanes' own, in different banks.
    unsigned* const spare = words + lane % (unsigned)word_count;
    if ((reinterpret_cast<unsigned long long>(o.offsets) & 15ull) == 0ull) {
      if (o.width == 4 && end <= (1ull << 32)) {
        // An offset of 32 bits below the tile is below it by less than
        // 2^32 - valid (the tile ends by 2^32): its 32-bit distance wraps
        // to valid or more, as the 64-bit one does. Half the instructions.
        warp_offsets_chunks<unsigned, unsigned>(static_cast<const unsigned*>(o.offsets), lo, hi, (unsigned)base, valid, words, spare);
      } else if (o.width == 4) {
        warp_offsets_chunks<unsigned, unsigned long long>(static_cast<const unsigned*>(o.offsets), lo, hi, base, valid, words, spare);
      } else {
        warp_offsets_chunks<unsigned long long, unsigned long long>(static_cast<const unsigned long long*>(o.offsets), lo, hi, base, valid, words, spare);
      }
    } else {
#pragma unroll 4
      for (unsigned long long r = lo + lane; r < hi; r += 32) {
        or_head_bit<unsigned long long>(offset_at(o, r) - base, valid, words);
      }
    }
  } else {
    for (int w = (int)lane; w < word_count; w += 32) {
      const int first = w * 32;
      const int count = valid - first < 32 ? valid - first : 32;
      if (count > 0) words[w] = offsets_window<unsigned>(o, base + (unsigned long long)first, count);
    }
  }
}

#ifdef GPU_SCAN_SEGMENTED
// The offsets' heads (segments.cuh): each thread finds its own items'
// from the offsets (offsets_window).
template <class Op, int Strategy>
template <int Items>
__device__ __forceinline__ unsigned segment_offsets<Op, Strategy>::thread_heads(unsigned long long base, int valid, unsigned long long n) const {
  static_assert(Items <= 32, "a thread's head flags fit one word");
  const int first = (int)threadIdx.x * Items;
  const int count = first >= valid ? 0 : valid - first < Items ? valid - first : Items;
  if constexpr (mirrored) {
    // As for bit flags: item first + i's head is element top + 1 - i's
    // head flag, for elements low … top + 1 but element n.
    const unsigned long long top = base + (unsigned long long)(valid - 1 - first);
    const bool last = count > 0 && top + 1 == n;
    const int readable = last ? count - 1 : count;
    const unsigned long long low = count > 0 ? top + 2 - (unsigned long long)count : base;
    const unsigned window = offsets_window<unsigned>(offsets, low, readable);
    unsigned heads = readable > 0 ? __brev(window) >> (32 - count) : 0u;
    if (last) heads |= 1u;
    return heads;
  } else {
    const unsigned long long start = base + (unsigned long long)first;
    unsigned heads = offsets_window<unsigned>(offsets, start, count);
    if (count > 0 && start == 0) heads |= 1u;
    return heads;
  }
}

template <class Op, int Strategy>
__device__ __forceinline__ unsigned long long segment_offsets<Op, Strategy>::span_heads(unsigned long long base, int first, int count) const {
  const unsigned long long at = base + first;
  unsigned long long heads = offsets_window<unsigned long long>(offsets, at, count > 0 ? count : 0);
  if (count > 0 && at == 0) heads |= 1ull;
  return heads;
}
#endif

}  // namespace gpu_scan
