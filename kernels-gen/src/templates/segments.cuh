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

}  // namespace gpu_scan
