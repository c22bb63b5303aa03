// ---- Segment sources: where segments start (chapter 1.3.2 and 1.5) ----
// Every algorithm template takes a segment-source policy `Seg`:
//  * no_segments: a plain scan. Nothing starts a segment; the algorithms'
//    `seed` goes in front of the whole input. Every `if constexpr
//    (Seg::segmented)` below drops out, so a plain scan compiles to the
//    code of the unsegmented algorithm.
//  * head_flags<Op, Format, Strategy>: a head flag marks the first element
//    of a segment (element 0 always starts one), given as bytes (non-zero
//    marks a head) or bits packed into 32-bit words (element i is bit
//    i % 32 of word i / 32). With `seeded`, `seed` goes in front of every
//    segment; exclusive scans write `seed` at heads (the identity when not
//    seeded). Nothing is in front of the input, whose element 0 is a head.
//  * fixed_rows<Op, Strategy>: segments of row_length elements each (the
//    rows of a row-major matrix), element e starting one where
//    e % row_length == 0. The heads are arithmetic: nothing but the
//    elements is read. Seeding as for head_flags.
//  * segment_offsets<Op, Strategy>: segments given by their start offsets
//    (CSR row pointers), element offsets[r] starting one. Each thread finds
//    the offsets of its items (offsets_window) between two entries of the
//    offsets' index: no flags are read or written, and the work follows
//    the number of offsets, not the segments' lengths. Seeding as for
//    head_flags.
//  * segment_keys<Op, Strategy>: one key per element (a scan by key),
//    element i starting a segment where keys[i] != keys[i - 1]. Each
//    thread reads the keys of its items and the one before them: no flags
//    are built, read or written. Seeding as for head_flags.
//
// Values are combined only within a segment and always in order, so the
// operator never needs to be commutative. Above the element, the
// algorithms combine (flag, value) pairs, where the flag says "a segment
// starts in here", with
//   (f1, v1) ⊕ (f2, v2) = (f1 | f2, f2 ? v2 : v1 ∘ v2),
// associative whenever ∘ is (Fig. 1.9). Two strategies differ in how a
// warp stops at a head:
//  * scan_segmented_transform: ⊕ expanded into a warp routine that
//    shuffles the flags along with the values (Fig. 1.10);
//  * scan_segmented_indexing: each lane finds the lane of its segment's
//    head and only takes partials from lanes at or after it (Fig. 1.11).
// For no_segments every flag is false and ⊕ is ∘.
namespace gpu_scan {

struct no_segments {
  static constexpr bool segmented = false;
  static constexpr bool mirrored = false;
};

#ifdef GPU_SCAN_SEGMENTED
template <class Op, int Format, int Strategy, bool WholeWords = true>
struct head_flags {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // A reverse scan's flags: item k's head is its element's tail flag.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = Format;
  static constexpr int strategy = Strategy;
  // Byte flags may be read four at a time where aligned (the one-block
  // pass over tile flags reads them one by one: the simpler loop keeps
  // ptxas from spilling its carry for some element types).
  static constexpr bool whole_words = WholeWords;
  const void* flags;
  T seed;
  bool seeded;
  // The partial a segment starts with at its head `item`.
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
};

template <class Op, int Strategy>
struct fixed_rows {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // In reverse, an item's head is its element's row's last element.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = scan_fixed_rows;
  static constexpr int strategy = Strategy;
  unsigned long long row_length;  // at least 1
  T seed;
  bool seeded;
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
};

template <class Op, int Strategy>
struct segment_offsets {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // In reverse, an item's head is its element's segment's last element.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = scan_segment_offsets;
  static constexpr int strategy = Strategy;
  scan_offsets offsets;  // ascending, at most n (checked by the host)
  T seed;
  bool seeded;
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
};

template <class Op, int Strategy>
struct segment_keys {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // In reverse, an item's head is its element's segment's last element.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = scan_segment_keys;
  static constexpr int strategy = Strategy;
  // The tiles' threads, which find a tile's heads together (tile_key_heads).
  static constexpr int block_threads = Shape<Op>::block_threads;
  scan_keys keys;  // n keys of 1, 2, 4 or 8 bytes (checked by the host)
  T seed;
  bool seeded;
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
};
#endif

// ---- Heads from offsets, found by each thread ----
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

// Bit k for every k < count with k ≡ first (mod period), first < period:
// the row heads among `count` consecutive items when the first head is
// item `first`.
__device__ __forceinline__ unsigned long long periodic_bits(unsigned long long first, unsigned long long period, int count) {
  unsigned long long bits = 0;
  for (unsigned long long k = first; k < (unsigned long long)count; k += period) bits |= 1ull << k;
  return bits;
}

// Bits [shift, shift + count) of words[0], words[1], words[2], bit 0 first
// (shift below 32, count at most 64); words past the window are not read.
__device__ __forceinline__ unsigned long long bit_window(const unsigned* words, unsigned shift, int count) {
  const unsigned spanned = (shift + (unsigned)count + 31u) / 32u;
  unsigned long long window = words[0];
  if (spanned > 1) window |= (unsigned long long)words[1] << 32;
  window >>= shift;
  if (spanned > 2) window |= (unsigned long long)words[2] << (64u - shift);
  return count == 64 ? window : window & ((1ull << count) - 1ull);
}

// ---- Heads from keys ----
// A tile's heads, found by its threads together: element j of the tile
// (j = i·B + t for B threads) is compared with its neighbour by thread t.
// Both keys are loaded (the neighbour's from the same cache lines), with
// no branch, so that every load of the unrolled loop can be in flight at
// once and a warp's loads coalesce. A ballot packs each warp's 32 answers
// into word j / 32 of `words` (bit j % 32): the tile's heads in element
// order. Going forward, element e's head is e == 0 or
// keys[e] != keys[e - 1]; mirrored (a reverse scan), the head in scan order
// of element e is its tail: e == n - 1 or keys[e + 1] != keys[e].
// Group: the items whose loads are in flight together (all of them where
// one squad must cover the latency alone, as in the pipelined pass; a few
// where other resident blocks hide it and registers are capped, as in the
// single pass).
template <class Key, int Items, int BlockThreads, bool Mirrored, int Group>
__device__ __forceinline__ void tile_key_words(const Key* keys, unsigned long long base, int valid, unsigned long long n, unsigned* words) {
#pragma unroll 1
  for (int i0 = 0; i0 < Items; i0 += Group) {
#pragma unroll
    for (int g = 0; g < Group; ++g) {
      const int i = i0 + g;
      if (Items % Group != 0 && i >= Items) break;
      const int j = i * BlockThreads + (int)threadIdx.x;
      const bool in = j < valid;
      // Elements past the tile read the tile's first key, and are no heads.
      const unsigned long long e = in ? base + (unsigned long long)j : base;
      const Key key = __ldg(keys + e);
      bool head;
      if constexpr (Mirrored) {
        const Key next = __ldg(keys + (e + 1 < n ? e + 1 : e));
        head = in && (e + 1 == n || next != key);
      } else {
        const Key previous = __ldg(keys + (e > 0 ? e - 1 : 0));
        head = in && (e == 0 || previous != key);
      }
      const unsigned word = __ballot_sync(0xffffffffu, head);
      if ((threadIdx.x & 31u) == 0u) words[i * (BlockThreads / 32) + (int)(threadIdx.x >> 5)] = word;
    }
  }
}

// tile_key_words for the keys' width (one branch, the same for the whole
// grid); Threads threads call it.
template <int Items, int Threads, bool Mirrored, int Group>
__device__ __forceinline__ void write_key_words(const scan_keys& k, unsigned long long base, int valid, unsigned long long n, unsigned* words) {
  switch (k.width) {
    case 1:
      tile_key_words<unsigned char, Items, Threads, Mirrored, Group>((const unsigned char*)k.keys, base, valid, n, words);
      break;
    case 2:
      tile_key_words<unsigned short, Items, Threads, Mirrored, Group>((const unsigned short*)k.keys, base, valid, n, words);
      break;
    case 4:
      tile_key_words<unsigned, Items, Threads, Mirrored, Group>((const unsigned*)k.keys, base, valid, n, words);
      break;
    default:
      tile_key_words<unsigned long long, Items, Threads, Mirrored, Group>((const unsigned long long*)k.keys, base, valid, n, words);
      break;
  }
}

// The head flags of this thread's blocked items (as thread_heads), from
// the tile's words. Every thread of the block calls it, once per block
// (its shared words are written, a barrier passed, then read).
template <class Seg, int Items>
__device__ __forceinline__ unsigned tile_key_heads(const Seg& seg, unsigned long long base, int valid, unsigned long long n) {
  static_assert(Items <= 32, "a thread's head flags fit one word");
  __shared__ unsigned words[Items * Seg::block_threads / 32];
  write_key_words<Items, Seg::block_threads, Seg::mirrored, (Items < 4 ? Items : 4)>(seg.keys, base, valid, n, words);
  __syncthreads();
  const int first = (int)threadIdx.x * Items;
  const int count = first >= valid ? 0 : valid - first < Items ? valid - first : Items;
  if (count == 0) return 0u;
  if constexpr (Seg::mirrored) {
    // Item first + k is tile element valid - 1 - first - k: the window of
    // elements low … low + count - 1, reversed.
    const int low = valid - first - count;
    const unsigned window = (unsigned)bit_window(words + (low >> 5), (unsigned)(low & 31), count);
    return __brev(window) >> (32 - count);
  } else {
    return (unsigned)bit_window(words + (first >> 5), (unsigned)(first & 31), count);
  }
}

// Whether segments come from keys.
template <class Seg>
constexpr bool keyed() {
  if constexpr (Seg::segmented) {
    return Seg::format == scan_segment_keys;
  } else {
    return false;
  }
}

// Whether a tile's heads are found before its elements load: from offsets
// and from keys, whose loads then run with no items live in registers
// (after the load they made ptxas spill at the single pass's register
// cap). Flags are read after the elements.
template <class Seg>
constexpr bool heads_before_load() {
  if constexpr (Seg::segmented) {
    return Seg::format == scan_segment_offsets || Seg::format == scan_segment_keys;
  } else {
    return false;
  }
}

// The head flags of this thread's blocked items of a tile of Items per
// thread, the tile's elements being [base, base + valid) of `n`: bit i for
// item t·Items + i. Items past `valid` have none. Going forward, item k is
// element base + k, and element 0 always has a head. Mirrored (a reverse
// scan), item k is element e = base + valid - 1 - k, whose head in scan
// order is its tail: e is the last element, or element e + 1 has a head.
// Keys are compared by the whole block at once (tile_key_heads): every
// thread of the block calls this, once per block.
template <class Seg, int Items>
__device__ __forceinline__ unsigned thread_heads(const Seg& seg, unsigned long long base, int valid, unsigned long long n) {
  if constexpr (!Seg::segmented) {
    return 0u;
  } else if constexpr (Seg::format == scan_segment_offsets) {
    static_assert(Items <= 32, "a thread's head flags fit one word");
    const int first = (int)threadIdx.x * Items;
    const int count = first >= valid ? 0 : valid - first < Items ? valid - first : Items;
    if constexpr (Seg::mirrored) {
      // As for bit flags below: item first + i's head is element
      // top + 1 - i's head flag, for elements low … top + 1 but element n.
      const unsigned long long top = base + (unsigned long long)(valid - 1 - first);
      const bool last = count > 0 && top + 1 == n;
      const int readable = last ? count - 1 : count;
      const unsigned long long low = count > 0 ? top + 2 - (unsigned long long)count : base;
      const unsigned window = offsets_window<unsigned>(seg.offsets, low, readable);
      unsigned heads = readable > 0 ? __brev(window) >> (32 - count) : 0u;
      if (last) heads |= 1u;
      return heads;
    } else {
      const unsigned long long start = base + (unsigned long long)first;
      unsigned heads = offsets_window<unsigned>(seg.offsets, start, count);
      if (count > 0 && start == 0) heads |= 1u;
      return heads;
    }
  } else if constexpr (Seg::format == scan_segment_keys) {
    return tile_key_heads<Seg, Items>(seg, base, valid, n);
  } else if constexpr (Seg::format == scan_fixed_rows) {
    static_assert(Items <= 32, "a thread's head flags fit one word");
    const int first = (int)threadIdx.x * Items;
    if (first >= valid) return 0u;
    const int count = valid - first < Items ? valid - first : Items;
    const unsigned long long length = seg.row_length;
    if constexpr (Seg::mirrored) {
      // Item k is element top - k, a head in scan order where it ends a row:
      // (top - k + 1) % length == 0, k ≡ (top + 1) mod length (and the last
      // element, which the host makes a row's end too).
      const unsigned long long top = base + (unsigned long long)(valid - 1 - first);
      return (unsigned)periodic_bits((top + 1) % length, length, count) | (top + 1 == n ? 1u : 0u);
    } else {
      // Item k is element e + k, a head where (e + k) % length == 0.
      const unsigned long long phase = (base + (unsigned long long)first) % length;
      return (unsigned)periodic_bits(phase == 0 ? 0 : length - phase, length, count);
    }
  } else if constexpr (Seg::mirrored) {
    static_assert(Items <= 32, "a thread's head flags fit one word");
    const int first = (int)threadIdx.x * Items;
    if (first >= valid) return 0u;
    const int count = valid - first < Items ? valid - first : Items;
    // Item first + i is element top - i, and its tail flag element top - i + 1's
    // head flag: the flags of elements low … top + 1 (low = top + 2 - count),
    // but for element n (past the input): the last element is a tail without.
    const unsigned long long top = base + (unsigned long long)(valid - 1 - first);
    const bool last = top + 1 == n;
    const unsigned long long low = top + 2 - (unsigned long long)count;
    const int readable = last ? count - 1 : count;
    unsigned heads = 0;
    if constexpr (Seg::format == scan_flags_bytes) {
      // Item first + i's tail flag is the byte of element top + 1 - i.
      const unsigned char* next = (const unsigned char*)seg.flags + top + 1;
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        if (i < count && (i > 0 || !last) && next[-i] != 0) heads |= 1u << i;
      }
    } else if (readable > 0) {
      // Bit b (element low + b) becomes bit count - 1 - b.
      const unsigned window = (unsigned)bit_window((const unsigned*)seg.flags + (low >> 5), (unsigned)(low & 31u), readable);
      heads = __brev(window) >> (32 - count);
    }
    if (last) heads |= 1u;
    return heads;
  } else {
    static_assert(Items <= 32, "a thread's head flags fit one word");
    const int first = (int)threadIdx.x * Items;
    unsigned heads = 0;
    if constexpr (Seg::format == scan_flags_bytes) {
      const unsigned char* bytes = (const unsigned char*)seg.flags + base + first;
      if (Seg::whole_words && Items % 4 == 0 && first + Items <= valid && ((unsigned long long)bytes & 3u) == 0) {
        // Whole aligned words: a quarter of the loads (bytes are little-endian in a word).
#pragma unroll
        for (int w = 0; w < Items / 4; ++w) {
          const unsigned word = ((const unsigned*)bytes)[w];
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            if ((word >> (8 * b)) & 0xffu) heads |= 1u << (4 * w + b);
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < Items; ++i) {
          if (first + i < valid && bytes[i] != 0) heads |= 1u << i;
        }
      }
    } else if (first < valid) {
      // At most 32 bits starting at bit `bit`: one word or the end of one and
      // the start of the next (read only when those bits exist).
      const int count = valid - first < Items ? valid - first : Items;
      const unsigned long long bit = base + first;
      const unsigned* words = (const unsigned*)seg.flags + (bit >> 5);
      const unsigned shift = (unsigned)(bit & 31u);
      unsigned long long window = words[0] >> shift;
      if (shift + count > 32) window |= (unsigned long long)words[1] << (32u - shift);
      heads = (unsigned)(window & ((1ull << count) - 1ull));
    }
    if (base + first == 0) heads |= 1u;
    return heads;
  }
}

// The head flags of elements base + first … base + first + count - 1 (count
// at most 64), bit i for element base + first + i; element 0 always has
// one (the pipelined pass's items, in shared memory).
template <class Seg>
__device__ __forceinline__ unsigned long long span_heads(const Seg& seg, unsigned long long base, int first, int count) {
  static_assert(!keyed<Seg>(), "the pipelined pass finds keys' heads by squad (write_key_words)");
  if constexpr (!Seg::segmented) {
    return 0ull;
  } else if constexpr (Seg::format == scan_segment_offsets) {
    const unsigned long long at = base + first;
    unsigned long long heads = offsets_window<unsigned long long>(seg.offsets, at, count > 0 ? count : 0);
    if (count > 0 && at == 0) heads |= 1ull;
    return heads;
  } else {
    unsigned long long heads = 0;
    if (count > 0) {
      const unsigned long long at = base + first;
      if constexpr (Seg::format == scan_fixed_rows) {
        const unsigned long long phase = at % seg.row_length;
        heads = periodic_bits(phase == 0 ? 0 : seg.row_length - phase, seg.row_length, count);
      } else if constexpr (Seg::format == scan_flags_bytes) {
        const unsigned char* bytes = (const unsigned char*)seg.flags + at;
        for (int i = 0; i < count; ++i) heads |= (unsigned long long)(bytes[i] != 0) << i;
      } else {
        heads = bit_window((const unsigned*)seg.flags + (at >> 5), (unsigned)(at & 31u), count);
      }
      if (at == 0) heads |= 1ull;
    }
    return heads;
  }
}

// ---- Warp level over (flag, value) pairs ----
// Lane i returns the combination of the values from its segment's head (or
// lane 0) through lane i; `flag` (lane i's own flag on entry) becomes true
// when a head lies in lanes 0..i.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ T warp_pair_inclusive_scan(T value, bool& flag) {
  if constexpr (!Seg::segmented) {
    return warp_inclusive_scan<Op>(value);
  } else {
    const unsigned lane = threadIdx.x & 31u;
    if constexpr (Seg::strategy == scan_segmented_transform) {
#pragma unroll
      for (unsigned offset = 1; offset < 32; offset <<= 1) {
        const T earlier = scan_shfl_up(value, offset);
        const bool earlier_flag = __shfl_up_sync(0xffffffffu, (int)flag, offset) != 0;
        if (lane >= offset) {
          // (earlier_flag, earlier) ⊕ (flag, value)
          if (!flag) value = Op::combine(earlier, value);
          flag = flag || earlier_flag;
        }
      }
    } else {
      // The max-scan of head indices: the highest flagged lane at or below
      // this one (lane 0 when there is none). A ballot gives it in one step.
      const unsigned heads_so_far = __ballot_sync(0xffffffffu, flag) & (0xffffffffu >> (31u - lane));
      const unsigned head_lane = heads_so_far != 0 ? 31u - (unsigned)__clz((int)heads_so_far) : 0u;
#pragma unroll
      for (unsigned offset = 1; offset < 32; offset <<= 1) {
        const T earlier = scan_shfl_up(value, offset);
        // Lane i - offset holds a partial of this segment only when it is not
        // before the head; otherwise lane i already holds head..i.
        if (lane >= head_lane + offset) value = Op::combine(earlier, value);
      }
      flag = heads_so_far != 0;
    }
    return value;
  }
}

// ---- Block level over (flag, value) pairs, one per thread ----
// Returns thread t's *lifted exclusive prefix*: the combination of the
// values of threads h..t-1, where h is the last flagged thread before t
// (thread 0 if none); `prefix_flag` tells whether such a thread exists.
// Thread 0 gets (identity, false). A thread whose first element is a head
// ignores its prefix; any other puts it in front of its values.
// `block_total`, `block_flag`: all threads' pairs combined with ⊕.
// Shared memory: warp_totals[Shape<Op>::warps + 1], warp_flags[Shape<Op>::warps]
// (unused for no_segments). All threads must call it, and a second call
// must follow a __syncthreads().
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ T block_pair_exclusive_scan(T value, bool flag, bool& prefix_flag, T* warp_totals, bool* warp_flags, T& block_total, bool& block_flag) {
  if constexpr (!Seg::segmented) {
    prefix_flag = false;
    block_flag = false;
    return block_exclusive_scan<Op, Shape<Op>::warps>(value, warp_totals, block_total);
  } else {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    bool inclusive_flag = flag;
    const T inclusive = warp_pair_inclusive_scan<Op, Seg>(value, inclusive_flag);
    if (lane == 31) {
      warp_totals[warp] = inclusive;
      warp_flags[warp] = inclusive_flag;
    }
    __syncthreads();
    if (warp == 0) {
      // Warp 0 scans the warps' pairs (idle lanes hold (identity, false)), so
      // entry w becomes the pair of warps 0..w.
      bool f = lane < Shape<Op>::warps && warp_flags[lane];
      const T total = lane < Shape<Op>::warps ? warp_totals[lane] : Op::identity();
      const T scanned = warp_pair_inclusive_scan<Op, Seg>(total, f);
      if (lane < Shape<Op>::warps) {
        warp_totals[lane] = scanned;
        warp_flags[lane] = f;
      }
    }
    __syncthreads();
    block_total = warp_totals[Shape<Op>::warps - 1];
    block_flag = warp_flags[Shape<Op>::warps - 1];
    // Within the warp, the exclusive prefix is the previous lane's inclusive one.
    T prefix = scan_shfl_up(inclusive, 1);
    const bool previous_flag = __shfl_up_sync(0xffffffffu, (int)inclusive_flag, 1) != 0;
    prefix_flag = lane != 0 && previous_flag;
    if (warp > 0 && !prefix_flag) {
      // No head in this warp before this lane: the segment that is open at
      // the warp's start continues here, so the earlier warps' partial goes
      // in front (lane 0 has nothing of its own warp in front of it).
      const T before = warp_totals[warp - 1];
      prefix = lane == 0 ? before : Op::combine(before, prefix);
      prefix_flag = warp_flags[warp - 1];
    }
    return threadIdx.x == 0 ? Op::identity() : prefix;
  }
}

// The block's pair that block_pair_exclusive_scan left in `warp_totals`
// and `warp_flags` (they keep it until written again): read back where
// keeping it in registers would cost more than the shared-memory load.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ T block_pair_total(const T* warp_totals, const bool* warp_flags, bool& block_flag) {
  if constexpr (!Seg::segmented) {
    block_flag = false;
    return warp_totals[Shape<Op>::warps];
  } else {
    block_flag = warp_flags[Shape<Op>::warps - 1];
    return warp_totals[Shape<Op>::warps - 1];
  }
}

// (total_flag, total) ⊕= (flag, value): for no_segments, total ∘= value.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ void pair_accumulate(T& total, bool& total_flag, const T& value, bool flag) {
  if constexpr (Seg::segmented) {
    total = flag ? value : Op::combine(total, value);
    total_flag = total_flag || flag;
  } else {
    total = Op::combine(total, value);
  }
}

// ---- Thread level: a thread's items and their head mask ----
// A thread's pair: whether one of its items is a head (heads != 0), and the
// combination of its last segment's items (all items when none is a head),
// seeded at a head. `item(i)` reads item i.
template <class Op, class Seg, int Items, class Item, class Mask, class T = typename Op::T>
__device__ __forceinline__ T thread_pair_reduce(Item item, Mask heads, const Seg& seg) {
  if constexpr (!Seg::segmented) {
    T total = item(0);
#pragma unroll
    for (int i = 1; i < Items; ++i) total = Op::combine(total, item(i));
    return total;
  } else {
    T total = (heads & 1u) ? seg.start(item(0)) : item(0);
#pragma unroll
    for (int i = 1; i < Items; ++i) {
      const T next = item(i);
      total = ((heads >> i) & 1u) ? seg.start(next) : Op::combine(total, next);
    }
    return total;
  }
}

// Rescans a thread's items in place behind `running`, the partial open
// before its first item (Mode: scan_inclusive, scan_exclusive or
// scan_exclusive_carry, see the prelude). `at(i)` is a reference to item i,
// or a value that converts to T and assigns from it.
template <class Op, int Mode, class Seg, int Items, class At, class Mask, class T = typename Op::T>
__device__ __forceinline__ void thread_pair_rescan(At at, Mask heads, T running, const Seg& seg) {
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    auto&& slot = at(i);  // a T&, or a reference-like value
    const T item = slot;
    if constexpr (Seg::segmented) {
      if ((heads >> i) & 1u) {
        const T start = seg.start(item);
        slot = Mode == scan_inclusive ? start : Mode == scan_exclusive ? seg.seed : running;
        running = start;
        continue;
      }
    }
    const T next = Op::combine(running, item);
    slot = Mode == scan_inclusive ? next : running;
    running = next;
  }
}

}  // namespace gpu_scan
