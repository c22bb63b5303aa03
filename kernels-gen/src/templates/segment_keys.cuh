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

#ifdef GPU_SCAN_SEGMENTED
// The keys' heads (segments.cuh): the block compares the tile's keys
// together (tile_key_heads).
template <class Op, int Strategy>
template <int Items>
__device__ __forceinline__ unsigned segment_keys<Op, Strategy>::thread_heads(unsigned long long base, int valid, unsigned long long n) const {
  return tile_key_heads<segment_keys, Items>(*this, base, valid, n);
}
#endif

}  // namespace gpu_scan
