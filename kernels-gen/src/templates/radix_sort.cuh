// ---- Radix sort: LSD, eight bits a pass, one pass over the keys per digit ----
// The CPU's sort (scan_core::sort) and this one order keys the same way: a
// key's bits transformed so that their unsigned order is the key's
// (radix_key), inverted for a descending sort, compared over a range of
// bits eight at a time from the lowest, each pass stable. A sort is three
// kernels: radix_histograms counts every pass's digits in one read of the
// keys; radix_offsets scans each pass's 256 counts into where each digit's
// keys start; radix_onesweep (one launch a pass) moves every key (and its
// value) to its place for that digit, in the Onesweep style: each block
// takes a tile (in order, from a counter), ranks its keys by digit (stably:
// a warp's items in element order, then the warps in order), publishes its
// 256 digit counts and looks back over the tiles before it, digit by digit,
// for how many keys of each digit precede it (a decoupled look-back over
// 64-bit status words: a flag and a count, zeroed by the host before each
// pass, as CUB's Onesweep clears its look-back), then writes each key to
// the digit's start plus that many plus its rank.
namespace gpu_scan {

constexpr int radix_digit_bits = 8;
constexpr int radix_digits = 1 << radix_digit_bits;
// The most passes a key takes (64 bits).
constexpr int radix_most_passes = 8;

// Key kinds: unsigned integers, signed integers, floats.
enum radix_kind { radix_unsigned = 0, radix_signed = 1, radix_float = 2 };

template <int Bytes> struct radix_unsigned_of;
template <> struct radix_unsigned_of<1> { typedef unsigned char type; };
template <> struct radix_unsigned_of<2> { typedef unsigned short type; };
template <> struct radix_unsigned_of<4> { typedef unsigned int type; };
template <> struct radix_unsigned_of<8> { typedef unsigned long long type; };

// The unsigned word a key's digits are taken from: 32 bits for keys of up
// to four bytes, so that their digits cost no 64-bit shifts.
template <bool Wide> struct radix_word_of { typedef unsigned type; };
template <> struct radix_word_of<true> { typedef unsigned long long type; };

// A key's bits in an order whose unsigned comparison is the key's: signed
// integers' sign bit flipped; floats' -0.0 read as +0.0, then all bits
// flipped for a negative sign, else the sign bit set (as CUB's digit
// extractor and scan_core::sort::RadixKey::ordered_bits read them).
template <class Key, int Kind>
struct radix_key {
  typedef typename radix_unsigned_of<sizeof(Key)>::type bits_t;
  typedef typename radix_word_of<(sizeof(Key) > 4)>::type word_t;
  static constexpr bits_t sign = (bits_t)((bits_t)1 << (8 * sizeof(Key) - 1));
  static __device__ __forceinline__ word_t ordered(const Key key) {
    bits_t bits;
    memcpy(&bits, &key, sizeof(Key));
    if constexpr (Kind == radix_signed) {
      bits = (bits_t)(bits ^ sign);
    } else if constexpr (Kind == radix_float) {
      if (bits == sign) bits = 0;
      bits = (bits & sign) ? (bits_t)~bits : (bits_t)(bits | sign);
    }
    return (word_t)bits;
  }
};

// One pass's digit of a key: bits [shift, shift + width) of its ordered
// bits, inverted for a descending sort. It keeps the kernel's parameters
// rather than a mask and a flip made from them: those would hold
// registers for the whole kernel, where the parameters are re-read.
template <class Key, int Kind>
struct radix_digit_of {
  unsigned shift;
  unsigned width;
  bool descending;
  __device__ __forceinline__ unsigned operator()(const Key key) const {
    // In 64 bits for every key: with 32-bit words for narrow keys, ptxas
    // spilled the 20-key u32 tile at its register cap (sm_90).
    unsigned long long bits = radix_key<Key, Kind>::ordered(key);
    if (descending) bits = ~bits;
    return (unsigned)((bits >> shift) & ((1ull << width) - 1ull));
  }
};

// Kernel 1: counts[p][d] += the keys whose pass-p digit is d, for every
// pass, from one read of the keys (a grid-stride loop, each thread with
// radix_histogram_keys keys in flight; each block counts in shared memory,
// then adds its counts to the global ones). A key's ordered bits are
// flipped, shifted to begin_bit and cut at end_bit once, so that pass p's
// digit is their byte p.
template <class Key, int Kind, int Threads>
__device__ __forceinline__ void radix_histograms(const Key* keys, unsigned long long n, unsigned begin_bit, unsigned end_bit, bool descending,
                                                 unsigned long long* counts) {
  typedef typename radix_key<Key, Kind>::word_t word_t;
  constexpr int most_passes = (int)sizeof(Key);
  __shared__ unsigned local[most_passes * radix_digits];
  const int passes = (int)((end_bit - begin_bit + radix_digit_bits - 1) / radix_digit_bits);
  const unsigned span = end_bit - begin_bit;
  const word_t range = span >= 8u * sizeof(word_t) ? ~(word_t)0 : (word_t)(((word_t)1 << span) - 1u);
  const word_t flip = descending ? ~(word_t)0 : (word_t)0;
  for (int j = (int)threadIdx.x; j < passes * radix_digits; j += Threads) local[j] = 0u;
  __syncthreads();
  constexpr unsigned long long chunk = (unsigned long long)Threads * radix_histogram_keys;
  for (unsigned long long start = (unsigned long long)blockIdx.x * chunk; start < n; start += (unsigned long long)gridDim.x * chunk) {
    Key batch[radix_histogram_keys];
#pragma unroll
    for (int u = 0; u < radix_histogram_keys; ++u) {
      const unsigned long long e = start + (unsigned long long)(u * Threads) + threadIdx.x;
      batch[u] = keys[e < n ? e : start];
    }
#pragma unroll
    for (int u = 0; u < radix_histogram_keys; ++u) {
      if (start + (unsigned long long)(u * Threads) + threadIdx.x < n) {
        const word_t bits = ((radix_key<Key, Kind>::ordered(batch[u]) ^ flip) >> begin_bit) & range;
#pragma unroll
        for (int p = 0; p < most_passes; ++p) {
          if (p < passes) atomicAdd(local + p * radix_digits + (unsigned)((bits >> (radix_digit_bits * p)) & (word_t)(radix_digits - 1)), 1u);
        }
      }
    }
  }
  __syncthreads();
  for (int j = (int)threadIdx.x; j < passes * radix_digits; j += Threads) {
    if (local[j] != 0u) atomicAdd(counts + j, (unsigned long long)local[j]);
  }
}

// Kernel 2: one block of radix_digits threads a pass (block p): pass p's
// counts, in place, into the exclusive prefix of the digits before each.
__device__ __forceinline__ void radix_offsets(unsigned long long* counts) {
  __shared__ unsigned long long warp_totals[radix_digits / 32];
  unsigned long long* const pass = counts + (unsigned long long)blockIdx.x * radix_digits;
  const unsigned d = threadIdx.x;
  const unsigned lane = d & 31u;
  const unsigned long long count = pass[d];
  unsigned long long inclusive = count;
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    const unsigned long long earlier = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += earlier;
  }
  if (lane == 31u) warp_totals[d >> 5] = inclusive;
  __syncthreads();
  unsigned long long before = 0;
  for (unsigned w = 0; w < (d >> 5); ++w) before += warp_totals[w];
  pass[d] = before + inclusive - count;
}

// Status words of the look-back: a flag (0: not yet published) and a
// count (62 bits).
constexpr unsigned long long radix_status_aggregate = 1ull << 62;
constexpr unsigned long long radix_status_prefix = 2ull << 62;
constexpr unsigned long long radix_status_count = (1ull << 62) - 1ull;

// How a warp finds the lanes whose key has its digit
// (kernels_gen::radix_sort::SortRank): eight ballots, a bit each (CUB's
// MatchAny), or each lane's bit or-ed into a word per digit in shared
// memory and read back.
enum radix_rank_kind { radix_rank_ballots = 0, radix_rank_atomic_or = 1 };

// The lanes of the warp whose digit (eight bits) is this lane's, among
// those `in`: a ballot a bit.
__device__ __forceinline__ unsigned radix_match(const unsigned digit, const bool in) {
  unsigned peers = __ballot_sync(0xffffffffu, in);
#pragma unroll
  for (int b = 0; b < radix_digit_bits; ++b) {
    const bool set = (digit >> b) & 1u;
    const unsigned lanes = __ballot_sync(0xffffffffu, set);
    peers &= set ? lanes : ~lanes;
  }
  return peers;
}

// Kernel 3, one pass: every key (and value) of `keys_in` to its place in
// `keys_out` by its digit at bits [shift, shift + width), stably.
// `offsets` holds where each digit's keys start (radix_offsets);
// `status` 256 words a tile and `tile_counter` all zero when the pass
// starts. Threads at least radix_digits; tiles of Threads × Items keys,
// each warp's 32 × Items consecutive keys striped over its lanes.
// A tile is ranked in shared memory (per-warp match ranking, then the
// warps' and digits' counts scanned), publishes its digit counts before it
// looks back, and is staged in shared memory in sorted order, so that
// consecutive threads store consecutive keys of a digit (CUB's Onesweep
// writes its keys the same way).
template <class Key, int Kind, class Value, bool HasValues, int Threads, int Items, int Rank>
__device__ __forceinline__ void radix_onesweep(const Key* keys_in, Key* keys_out, const Value* values_in, Value* values_out, unsigned long long n,
                                               unsigned shift, unsigned width, bool descending, const unsigned long long* offsets,
                                               unsigned long long* status, unsigned* tile_counter) {
  static_assert(Threads % 32 == 0 && Threads >= radix_digits, "a thread for every digit");
  constexpr int warps = Threads / 32;
  constexpr int tile_items = Threads * Items;
  static_assert(tile_items * (int)sizeof(Key) <= radix_stage_bytes, "a tile's keys fit the staging buffer");
  // Values small enough go through the staging buffer after the keys;
  // larger ones are stored where they go directly (radix_stage_bytes and
  // this layout: kernels_gen::radix_sort::SortShape::shared_bytes).
  constexpr bool stage_values = HasValues && tile_items * (int)sizeof(Value) <= radix_stage_bytes;
  constexpr int key_bytes = tile_items * (int)sizeof(Key);
  constexpr int value_bytes = stage_values ? tile_items * (int)sizeof(Value) : 0;
  // The atomic-or ranking's words, a warp's 256, live in the staging
  // buffer until the tile is staged.
  constexpr int mask_bytes = Rank == radix_rank_atomic_or ? warps * radix_digits * 4 : 0;
  constexpr int staged_bytes = key_bytes > value_bytes ? key_bytes : value_bytes;
  __shared__ __align__(16) unsigned char stage[staged_bytes > mask_bytes ? staged_bytes : mask_bytes];
  __shared__ unsigned warp_counts[warps][radix_digits];
  __shared__ unsigned long long digit_shift[radix_digits];
  __shared__ unsigned digit_totals[radix_digits / 32];
  __shared__ unsigned shared_tile;
  Key* const staged_keys = reinterpret_cast<Key*>(stage);
  const unsigned lane = threadIdx.x & 31u;
  const int warp = (int)(threadIdx.x >> 5);
  unsigned* const masks = reinterpret_cast<unsigned*>(stage);
  for (int j = (int)threadIdx.x; j < warps * radix_digits; j += Threads) {
    (&warp_counts[0][0])[j] = 0u;
    if constexpr (Rank == radix_rank_atomic_or) masks[j] = 0u;
  }
  const radix_digit_of<Key, Kind> digit_of{shift, width, descending};
  if (threadIdx.x == 0) shared_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned long long tile = shared_tile;
  const unsigned long long tile_base = tile * tile_items;
  // Keys in the tile (all but in the last), in the warp's part of it.
  const unsigned valid = n - tile_base < (unsigned long long)tile_items ? (unsigned)(n - tile_base) : (unsigned)tile_items;
  const unsigned warp_first = (unsigned)warp * (32u * Items);
  const unsigned warp_valid = valid > warp_first ? valid - warp_first : 0u;
  const Key* const tile_keys = keys_in + tile_base;
  // The keys, each warp's striped over its lanes (item i of lane l is
  // the warp's element 32i + l); past the end, the tile's first (a warp
  // of the last tile may start past the end).
  Key keys[Items];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const unsigned e = 32u * (unsigned)i + lane;
    keys[i] = tile_keys[e < warp_valid ? warp_first + e : 0u];
  }
  // Ranks within the warp, in element order: the same digit's lanes of
  // each item together (by ballots, radix_match, or by or-ing their bits
  // into the digit's mask), behind the warp's count of it so far. A key
  // past the end has no digit (radix_digits) and no rank.
  unsigned ranks[Items];
  const unsigned below = (1u << lane) - 1u;
  unsigned* const warp_masks = masks + warp * radix_digits;
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const bool in = 32u * (unsigned)i + lane < warp_valid;
    const unsigned digit = in ? digit_of(keys[i]) : (unsigned)radix_digits;
    unsigned peers;
    if constexpr (Rank == radix_rank_atomic_or) {
      if (in) atomicOr(warp_masks + digit, 1u << lane);
      __syncwarp();
      peers = in ? warp_masks[digit] : 0u;
    } else {
      peers = radix_match(digit, in);
    }
    const unsigned before = in ? warp_counts[warp][digit] : 0u;
    __syncwarp();
    if (in && lane == (unsigned)(__ffs(peers) - 1)) {
      warp_counts[warp][digit] = before + (unsigned)__popc(peers);
      if constexpr (Rank == radix_rank_atomic_or) warp_masks[digit] = 0u;
    }
    __syncwarp();
    ranks[i] = before + (unsigned)__popc(peers & below);
  }
  __syncthreads();
  // Per digit (a thread each): the warps' counts into their exclusive
  // prefixes and the tile's count, published at once (so that the tiles
  // after this one can pass over it), then scanned over the digits.
  const unsigned d = threadIdx.x;
  unsigned count = 0;
  unsigned inclusive = 0;
  volatile unsigned long long* const words = status;
  if (d < (unsigned)radix_digits) {
    for (int w = 0; w < warps; ++w) {
      const unsigned c = warp_counts[w][d];
      warp_counts[w][d] = count;
      count += c;
    }
    words[tile * radix_digits + d] = (tile == 0 ? radix_status_prefix : radix_status_aggregate) | count;
    inclusive = count;
#pragma unroll
    for (unsigned offset = 1; offset < 32; offset <<= 1) {
      const unsigned earlier = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (lane >= offset) inclusive += earlier;
    }
    if (lane == 31u) digit_totals[d >> 5] = inclusive;
  }
  __syncthreads();
  // Where each digit's keys start in the tile, added to the warps' prefixes.
  unsigned tile_start = 0;
  if (d < (unsigned)radix_digits) {
    for (unsigned w = 0; w < (d >> 5); ++w) tile_start += digit_totals[w];
    tile_start += inclusive - count;
    for (int w = 0; w < warps; ++w) warp_counts[w][d] += tile_start;
  }
  __syncthreads();
  // Each key to its place in the tile's sorted order.
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    if (32u * (unsigned)i + lane < warp_valid) {
      ranks[i] += warp_counts[warp][digit_of(keys[i])];
      staged_keys[ranks[i]] = keys[i];
    }
  }
  // Per digit: the keys of the digit in the tiles before (the look-back),
  // so that the key at place j of the tile goes to digit_shift + j.
  if (d < (unsigned)radix_digits) {
    unsigned long long before = 0;
    if (tile != 0) {
      for (unsigned long long t = tile - 1;; --t) {
        unsigned long long word;
        do {
          word = words[t * radix_digits + d];
        } while ((word & (radix_status_aggregate | radix_status_prefix)) == 0ull);
        before += word & radix_status_count;
        if (word & radix_status_prefix) break;
      }
      words[tile * radix_digits + d] = radix_status_prefix | (before + count);
    }
    digit_shift[d] = offsets[d] + before - tile_start;
  }
  __syncthreads();
  // The tile in sorted order, consecutive threads at consecutive places.
  unsigned digits[Items];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const unsigned j = threadIdx.x + (unsigned)(i * Threads);
    if (j < valid) {
      const Key key = staged_keys[j];
      digits[i] = digit_of(key);
      keys_out[digit_shift[digits[i]] + j] = key;
    }
  }
  if constexpr (HasValues) {
    const Value* const warp_values = values_in + tile_base + warp_first;
    if constexpr (stage_values) {
      Value* const staged_values = reinterpret_cast<Value*>(stage);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = 32u * (unsigned)i + lane;
        if (e < warp_valid) staged_values[ranks[i]] = warp_values[e];
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned j = threadIdx.x + (unsigned)(i * Threads);
        if (j < valid) values_out[digit_shift[digits[i]] + j] = staged_values[j];
      }
    } else {
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = 32u * (unsigned)i + lane;
        if (e < warp_valid) {
          const unsigned digit = digit_of(keys[i]);
          values_out[digit_shift[digit] + ranks[i]] = warp_values[e];
        }
      }
    }
  }
}

// Kernel 4: out[i] = i for i < n (the indices an argsort carries).
template <class Index>
__device__ __forceinline__ void radix_iota(Index* out, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = (Index)i;
}

// ---- Records sorted by a #[sort_key]: its components' bits, and the gather ----

// Unsigned integers of a component's width (kernels_gen::radix_sort::sort_by_key_program).
typedef unsigned char unsigned_bits_8_t;
typedef unsigned short unsigned_bits_16_t;
typedef unsigned int unsigned_bits_32_t;
typedef unsigned long long unsigned_bits_64_t;

// How a key component's type orders (radix_key).
template <class T> struct radix_kind_of;
template <> struct radix_kind_of<unsigned char> { static constexpr int kind = radix_unsigned; };
template <> struct radix_kind_of<unsigned short> { static constexpr int kind = radix_unsigned; };
template <> struct radix_kind_of<unsigned int> { static constexpr int kind = radix_unsigned; };
template <> struct radix_kind_of<unsigned long long> { static constexpr int kind = radix_unsigned; };
template <> struct radix_kind_of<signed char> { static constexpr int kind = radix_signed; };
template <> struct radix_kind_of<short> { static constexpr int kind = radix_signed; };
template <> struct radix_kind_of<int> { static constexpr int kind = radix_signed; };
template <> struct radix_kind_of<long long> { static constexpr int kind = radix_signed; };
template <> struct radix_kind_of<float> { static constexpr int kind = radix_float; };
template <> struct radix_kind_of<double> { static constexpr int kind = radix_float; };

// bits[i] = the ordered bits of `key` of record order[i] (of record i
// where `order` is null), so that sorting the bits as unsigned integers
// sorts the records by that component.
template <class Component, class Record, class Bits, class KeyOf>
__device__ __forceinline__ void radix_extract(const Record* records, const unsigned long long* order, Bits* bits, unsigned long long n,
                                              KeyOf key) {
  static_assert(sizeof(Bits) == sizeof(Component), "bits as wide as the component");
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Record record = records[order != nullptr ? order[i] : i];
    bits[i] = (Bits)radix_key<Component, radix_kind_of<Component>::kind>::ordered(key(record));
  }
}

// out[i] = records[order[i]].
template <class Record>
__device__ __forceinline__ void radix_gather(const Record* records, const unsigned long long* order, Record* out, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = records[order[i]];
}

// ---- Segmented sort by offsets: the segments' numbers, and the gathers ----

// Offset i of `count` offsets of `width` bytes (4 or 8).
__device__ __forceinline__ unsigned long long radix_offset_at(const void* offsets, unsigned long long width, unsigned long long i) {
  return width == 4 ? (unsigned long long)((const unsigned*)offsets)[i] : ((const unsigned long long*)offsets)[i];
}

// bits[i] = how many offsets are at most order[i]: 0 before the first
// offset, s + 1 in segment s (offsets[s] <= p < offsets[s + 1]; of equal
// offsets, the non-empty segment after them), `count` from the last offset
// on, so that a stable sort by it groups the elements by segment.
template <class Bits>
__device__ __forceinline__ void radix_segment_of(const unsigned long long* order, Bits* bits, unsigned long long n, const void* offsets,
                                                 unsigned long long count, unsigned long long width) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const unsigned long long p = order[i];
    unsigned long long lo = 0, hi = count;
    while (lo < hi) {
      const unsigned long long mid = lo + (hi - lo) / 2;
      if (radix_offset_at(offsets, width, mid) <= p) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    bits[i] = (Bits)lo;
  }
}

// out[i] = in[order[i]] inside the segments, in[i] before the first offset
// and from the last on (those elements stay where they are).
template <class T>
__device__ __forceinline__ void radix_gather_segments(const T* in, const unsigned long long* order, T* out, unsigned long long n, const void* offsets,
                                                      unsigned long long count, unsigned long long width) {
  const unsigned long long first = radix_offset_at(offsets, width, 0);
  const unsigned long long last = radix_offset_at(offsets, width, count - 1);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = (i < first || i >= last) ? in[i] : in[order[i]];
  }
}

}  // namespace gpu_scan
