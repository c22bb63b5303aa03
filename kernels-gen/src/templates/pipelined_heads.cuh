// ---- Pipelined single pass: where each segment source finds a tile's heads ----
// One policy per segment source, pipelined_heads<Seg>, so that the kernel
// (pipelined.cuh) and the roles have no branch on where heads come from:
//   first_wait   the barrier the reduce squad waits on before it looks for
//                heads (`indexed`: it reads them while the tile loads);
//   heads_warps  whether heads warps find the tiles' heads, and arrive on
//                the stage's `loaded` barrier too (offsets);
//   bulk_bytes, bulk_load   head bits that travel with the tile in the
//                producer's bulk load (bits, whole tiles);
//   squad_heads  a reduce squad thread's heads, a mask over its items,
//                the tile loaded when it returns;
//   warp_heads   a heads warp's work on one tile (offsets).
namespace gpu_scan {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Every segment source has a policy of its own (no default).
template <class Seg>
struct pipelined_heads;

// No heads: what the policies build on.
struct pipelined_no_heads {
  static constexpr int first_wait = stage_loaded;
  static constexpr bool heads_warps = false;
  template <class Op>
  static __device__ __forceinline__ unsigned bulk_bytes(const pipelined_extent<Op>&) { return 0u; }
  template <class Seg, class Op, class Shared>
  static __device__ __forceinline__ void bulk_load(const Seg&, const Shared&, int, const pipelined_extent<Op>&, unsigned long long*) {}
  template <int Items, int Squad, class Seg, class Op, class Shared>
  static __device__ __forceinline__ unsigned long long squad_heads(const Seg&, const Shared&, int, unsigned, const pipelined_extent<Op>&, int,
                                                                   unsigned long long) {
    return 0ull;
  }
};

template <>
struct pipelined_heads<no_segments> : pipelined_no_heads {};

#ifdef GPU_SCAN_SEGMENTED
// Heads each thread reads (flags as bytes) or computes (rows of a fixed
// length) for its own items while the tile loads.
template <class Seg>
struct pipelined_span_heads : pipelined_no_heads {
  static constexpr int first_wait = stage_indexed;
  template <int Items, int Squad, class Op, class Shared>
  static __device__ __forceinline__ unsigned long long squad_heads(const Seg& seg, const Shared& shared, int s, unsigned parity,
                                                                   const pipelined_extent<Op>& extent, int first, unsigned long long) {
    const unsigned long long heads = seg.span_heads(extent.base, first, extent.valid - first < Items ? extent.valid - first : Items);
    scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
    return heads;
  }
};

template <class Op, int Strategy, bool WholeWords>
struct pipelined_heads<head_flags<Op, scan_flags_bytes, Strategy, WholeWords>>
    : pipelined_span_heads<head_flags<Op, scan_flags_bytes, Strategy, WholeWords>> {};

template <class Op, int Strategy>
struct pipelined_heads<fixed_rows<Op, Strategy>> : pipelined_span_heads<fixed_rows<Op, Strategy>> {};

// Flags as bits: a whole tile's head bits come in a second bulk load on the
// tile's barrier (tiles start at multiples of 128 elements: their bits at
// 16 bytes); a tail tile's threads read theirs as spans.
template <class SegOp, int Strategy, bool WholeWords>
struct pipelined_heads<head_flags<SegOp, scan_flags_bits, Strategy, WholeWords>> : pipelined_no_heads {
  typedef head_flags<SegOp, scan_flags_bits, Strategy, WholeWords> Seg;
  static constexpr int first_wait = stage_indexed;
  template <class Op>
  static __device__ __forceinline__ unsigned bulk_bytes(const pipelined_extent<Op>& extent) {
    return extent.valid == Shape<Op>::pipelined_items_per_tile ? (unsigned)Shape<Op>::pipelined_items_per_tile / 8u : 0u;
  }
  template <class Op, class Shared>
  static __device__ __forceinline__ void bulk_load(const Seg& seg, const Shared& shared, int s, const pipelined_extent<Op>& extent,
                                                   unsigned long long* loaded) {
    scan_bulk_load(shared.head_bits(s), (const unsigned char*)seg.flags + extent.base / 8, bulk_bytes(extent), loaded);
  }
  template <int Items, int Squad, class Op, class Shared>
  static __device__ __forceinline__ unsigned long long squad_heads(const Seg& seg, const Shared& shared, int s, unsigned parity,
                                                                   const pipelined_extent<Op>& extent, int first, unsigned long long) {
    const bool bits_loaded = extent.valid == Shape<Op>::pipelined_items_per_tile;
    unsigned long long heads = 0;
    if (!bits_loaded) heads = seg.span_heads(extent.base, first, extent.valid - first < Items ? extent.valid - first : Items);
    scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
    if (bits_loaded) {
      // A whole tile's head bits arrived with it; element 0 is a head.
      heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), Items);
      if (extent.base + (unsigned long long)first == 0ull) heads |= 1ull;
    }
    return heads;
  }
};

// Keys: the squad compares the tile's keys together (coalesced, while the
// tile loads) into the stage's head bits, then reads its own.
template <class SegOp, int Strategy>
struct pipelined_heads<segment_keys<SegOp, Strategy>> : pipelined_no_heads {
  typedef segment_keys<SegOp, Strategy> Seg;
  static constexpr int first_wait = stage_indexed;
  template <int Items, int Squad, class Op, class Shared>
  static __device__ __forceinline__ unsigned long long squad_heads(const Seg& seg, const Shared& shared, int s, unsigned parity,
                                                                   const pipelined_extent<Op>& extent, int first, unsigned long long n) {
    unsigned long long heads = 0;
    write_key_words<Items, Squad, false, Items>(seg.keys, extent.base, extent.valid, n, shared.head_bits(s));
    scan_named_barrier(1, Squad);
    const int count = extent.valid - first < Items ? extent.valid - first : Items;
    if (count > 0) heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), count);
    scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
    return heads;
  }
};

// Offsets: heads warps write each tile's head bits to its stage from the
// offsets (two round trips to memory: the tile's index entries, then its
// offsets) while the tile loads, and the stage counts as loaded only after.
template <class SegOp, int Strategy>
struct pipelined_heads<segment_offsets<SegOp, Strategy>> : pipelined_no_heads {
  typedef segment_offsets<SegOp, Strategy> Seg;
  static constexpr bool heads_warps = true;
  template <int Items, int Squad, class Op, class Shared>
  static __device__ __forceinline__ unsigned long long squad_heads(const Seg&, const Shared& shared, int s, unsigned,
                                                                   const pipelined_extent<Op>& extent, int first, unsigned long long) {
    // Element 0 is a head.
    unsigned long long heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), Items);
    if (extent.base + (unsigned long long)first == 0ull) heads |= 1ull;
    return heads;
  }
  template <class Op, class Shared>
  static __device__ __forceinline__ void warp_heads(const Seg& seg, const Shared& shared, int s, const pipelined_extent<Op>& extent) {
    warp_offsets_words<Shape<Op>::pipelined_items_per_tile>(seg.offsets, extent.base, extent.valid, shared.head_bits(s));
  }
};
#endif  // GPU_SCAN_SEGMENTED
#endif

}  // namespace gpu_scan
