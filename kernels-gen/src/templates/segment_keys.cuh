// ---- Heads from keys ----
// (A segment source of segments.cuh: segment_keys.)
namespace gpu_scan {

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

}  // namespace gpu_scan
