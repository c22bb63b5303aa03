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
// associative whenever ∘ is (Fig. 1.9; its scans are in segment_pairs.cuh,
// the heads of offsets and keys in segment_offsets.cuh and
// segment_keys.cuh). Two strategies differ in how a warp stops at a head:
//  * scan_segmented_transform: ⊕ expanded into a warp routine that
//    shuffles the flags along with the values (Fig. 1.10);
//  * scan_segmented_indexing: each lane finds the lane of its segment's
//    head and only takes partials from lanes at or after it (Fig. 1.11).
// For no_segments every flag is false and ⊕ is ∘.
//
// Each source carries its own head finding, in both directions (mirrored:
// a reverse scan, where an item's head in scan order is its element's
// tail), so that no algorithm branches on where heads come from:
//   heads_before_load  whether a tile's heads are found before its elements
//                      load (offsets, keys: their loads then run with no
//                      items live in registers) or after (flags, rows);
//   thread_heads<Items>(base, valid, n)  the head flags of this thread's
//                      blocked items of the tile [base, base + valid) of n
//                      elements, bit i for item t·Items + i (keys: every
//                      thread of the block calls it, once per block);
//   span_heads(base, first, count)  the head flags of elements
//                      base + first … + count - 1 in memory order (count at
//                      most 64; the pipelined pass's items; not for keys,
//                      whose squad finds a tile's heads together).
// The flags' and rows' definitions are below; the offsets' in
// segment_offsets.cuh and the keys' in segment_keys.cuh, beside what
// they read with.
namespace gpu_scan {

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

struct no_segments {
  static constexpr bool segmented = false;
  static constexpr bool mirrored = false;
  static constexpr bool heads_before_load = false;
  template <int Items>
  __device__ __forceinline__ unsigned thread_heads(unsigned long long, int, unsigned long long) const {
    return 0u;
  }
  __device__ __forceinline__ unsigned long long span_heads(unsigned long long, int, int) const { return 0ull; }
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
  // Flags are read after the elements.
  static constexpr bool heads_before_load = false;
  // Byte flags may be read four at a time where aligned (the one-block
  // pass over tile flags reads them one by one: the simpler loop keeps
  // ptxas from spilling its carry for some element types).
  static constexpr bool whole_words = WholeWords;
  const void* flags;
  T seed;
  bool seeded;
  // The partial a segment starts with at its head `item`.
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
  template <int Items>
  __device__ __forceinline__ unsigned thread_heads(unsigned long long base, int valid, unsigned long long n) const {
    static_assert(Items <= 32, "a thread's head flags fit one word");
    if constexpr (mirrored) {
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
      if constexpr (Format == scan_flags_bytes) {
        // Item first + i's tail flag is the byte of element top + 1 - i.
        const unsigned char* next = (const unsigned char*)flags + top + 1;
#pragma unroll
        for (int i = 0; i < Items; ++i) {
          if (i < count && (i > 0 || !last) && next[-i] != 0) heads |= 1u << i;
        }
      } else if (readable > 0) {
        // Bit b (element low + b) becomes bit count - 1 - b.
        const unsigned window = (unsigned)bit_window((const unsigned*)flags + (low >> 5), (unsigned)(low & 31u), readable);
        heads = __brev(window) >> (32 - count);
      }
      if (last) heads |= 1u;
      return heads;
    } else {
      const int first = (int)threadIdx.x * Items;
      unsigned heads = 0;
      if constexpr (Format == scan_flags_bytes) {
        const unsigned char* bytes = (const unsigned char*)flags + base + first;
        if (whole_words && Items % 4 == 0 && first + Items <= valid && ((unsigned long long)bytes & 3u) == 0) {
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
        const unsigned* words = (const unsigned*)flags + (bit >> 5);
        const unsigned shift = (unsigned)(bit & 31u);
        unsigned long long window = words[0] >> shift;
        if (shift + count > 32) window |= (unsigned long long)words[1] << (32u - shift);
        heads = (unsigned)(window & ((1ull << count) - 1ull));
      }
      if (base + first == 0) heads |= 1u;
      return heads;
    }
  }
  __device__ __forceinline__ unsigned long long span_heads(unsigned long long base, int first, int count) const {
    unsigned long long heads = 0;
    if (count > 0) {
      const unsigned long long at = base + first;
      if constexpr (Format == scan_flags_bytes) {
        const unsigned char* bytes = (const unsigned char*)flags + at;
        for (int i = 0; i < count; ++i) heads |= (unsigned long long)(bytes[i] != 0) << i;
      } else {
        heads = bit_window((const unsigned*)flags + (at >> 5), (unsigned)(at & 31u), count);
      }
      if (at == 0) heads |= 1ull;
    }
    return heads;
  }
};

template <class Op, int Strategy>
struct fixed_rows {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // In reverse, an item's head is its element's row's last element.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = scan_fixed_rows;
  static constexpr int strategy = Strategy;
  // The heads are arithmetic: nothing is read for them.
  static constexpr bool heads_before_load = false;
  unsigned long long row_length;  // at least 1
  T seed;
  bool seeded;
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
  template <int Items>
  __device__ __forceinline__ unsigned thread_heads(unsigned long long base, int valid, unsigned long long n) const {
    static_assert(Items <= 32, "a thread's head flags fit one word");
    const int first = (int)threadIdx.x * Items;
    if (first >= valid) return 0u;
    const int count = valid - first < Items ? valid - first : Items;
    const unsigned long long length = row_length;
    if constexpr (mirrored) {
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
  }
  __device__ __forceinline__ unsigned long long span_heads(unsigned long long base, int first, int count) const {
    unsigned long long heads = 0;
    if (count > 0) {
      const unsigned long long at = base + first;
      const unsigned long long phase = at % row_length;
      heads = periodic_bits(phase == 0 ? 0 : row_length - phase, row_length, count);
      if (at == 0) heads |= 1ull;
    }
    return heads;
  }
};

// Offsets' heads are defined in segment_offsets.cuh.
template <class Op, int Strategy>
struct segment_offsets {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // In reverse, an item's head is its element's segment's last element.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = scan_segment_offsets;
  static constexpr int strategy = Strategy;
  // The offsets' loads run before the elements', with no items live.
  static constexpr bool heads_before_load = true;
  scan_offsets offsets;  // ascending, at most n (checked by the host)
  T seed;
  bool seeded;
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
  template <int Items>
  __device__ __forceinline__ unsigned thread_heads(unsigned long long base, int valid, unsigned long long n) const;
  __device__ __forceinline__ unsigned long long span_heads(unsigned long long base, int first, int count) const;
};

// Keys' heads are defined in segment_keys.cuh.
template <class Op, int Strategy>
struct segment_keys {
  typedef typename Op::T T;
  static constexpr bool segmented = true;
  // In reverse, an item's head is its element's segment's last element.
  static constexpr bool mirrored = mirrored_memory<Op>::value;
  static constexpr int format = scan_segment_keys;
  static constexpr int strategy = Strategy;
  // The keys' loads run before the elements', with no items live.
  static constexpr bool heads_before_load = true;
  // The tiles' threads, which find a tile's heads together (tile_key_heads).
  static constexpr int block_threads = Shape<Op>::block_threads;
  scan_keys keys;  // n keys of 1, 2, 4 or 8 bytes (checked by the host)
  T seed;
  bool seeded;
  __device__ __forceinline__ T start(const T& item) const { return seeded ? Op::combine(seed, item) : item; }
  // Every thread of the block calls it, once per block.
  template <int Items>
  __device__ __forceinline__ unsigned thread_heads(unsigned long long base, int valid, unsigned long long n) const;
};
#endif

}  // namespace gpu_scan
