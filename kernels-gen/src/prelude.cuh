// gpu-scan prelude: Rust's semantics for operators translated by #[scan_op].
//
// Every helper here exists because plain C++ would differ from Rust:
// integer promotion, undefined signed overflow, out-of-range float-to-int
// casts, oversized shifts and FMA contraction. With these helpers an
// operator computes the same function on the GPU as on the CPU: integers bit
// for bit, floats IEEE with the same NaN rules.
#ifndef GPU_SCAN_PRELUDE
#define GPU_SCAN_PRELUDE

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
#error "gpu-scan kernels need sm_75 or newer (the oldest architecture CUDA 13 compiles for)"
#endif

// ---------------------------------------------------------------------------
// Type traits (NVRTC ships no standard headers).
// ---------------------------------------------------------------------------

// The unsigned type of the same width, and the type arithmetic happens in:
// at least `unsigned int`, so that narrow types never promote to signed int.
template <class T> struct scan_int_traits;
#define SCAN_INT_TRAITS(T, U, W, IS_SIGNED, MIN, MAX)                          \
  template <> struct scan_int_traits<T> {                                     \
    typedef U unsigned_type;                                                  \
    typedef W wide_unsigned_type;                                             \
    static constexpr bool is_signed = IS_SIGNED;                              \
    static constexpr unsigned bits = sizeof(T) * 8;                           \
    static constexpr T min = MIN;                                             \
    static constexpr T max = MAX;                                             \
  };
SCAN_INT_TRAITS(unsigned char, unsigned char, unsigned int, false, 0, 0xff)
SCAN_INT_TRAITS(unsigned short, unsigned short, unsigned int, false, 0, 0xffff)
SCAN_INT_TRAITS(unsigned int, unsigned int, unsigned int, false, 0u, 0xffffffffu)
SCAN_INT_TRAITS(unsigned long long, unsigned long long, unsigned long long, false, 0ull, 0xffffffffffffffffull)
SCAN_INT_TRAITS(signed char, unsigned char, unsigned int, true, -128, 127)
SCAN_INT_TRAITS(short, unsigned short, unsigned int, true, -32768, 32767)
SCAN_INT_TRAITS(int, unsigned int, unsigned int, true, (-2147483647 - 1), 2147483647)
SCAN_INT_TRAITS(long long, unsigned long long, unsigned long long, true, (-9223372036854775807ll - 1), 9223372036854775807ll)
#undef SCAN_INT_TRAITS


template <bool C, class A, class B> struct scan_conditional { typedef A type; };
template <class A, class B> struct scan_conditional<false, A, B> { typedef B type; };

template <class T> struct scan_is_float { static constexpr bool value = false; };
template <> struct scan_is_float<float> { static constexpr bool value = true; };
template <> struct scan_is_float<double> { static constexpr bool value = true; };
template <class T> struct scan_is_int { static constexpr bool value = false; };
#define SCAN_IS_INT(T) \
  template <> struct scan_is_int<T> { static constexpr bool value = true; };
SCAN_IS_INT(unsigned char) SCAN_IS_INT(unsigned short) SCAN_IS_INT(unsigned int) SCAN_IS_INT(unsigned long long)
SCAN_IS_INT(signed char) SCAN_IS_INT(short) SCAN_IS_INT(int) SCAN_IS_INT(long long)
#undef SCAN_IS_INT

// The exact value of an integer as a 32-bit (or wider) one, for every use
// that depends on bits above a narrow type's width: comparisons, widening
// casts, `>>`, `/` and `%`. Optimised CUDA 13.0 builds mis-handle 8- and
// 16-bit integers held in 32-bit registers: ptxas (-O1 and up) fused `b ==
// 0` on b = max(0, x) of two `signed char`s into a packed 16-bit min/max
// whose predicate does not mean equality (a guarded division by zero ran on
// the H200), and the driver's JIT compared `(-128i8) as u16` as -128 there.
// So a narrow value is extended here in inline PTX (bfe: sign- or
// zero-extends the low 8 or 16 bits), which no optimiser can see through
// or narrow back; wider types pass through.
template <class T, bool = (sizeof(T) < 4) && scan_is_int<T>::value> struct scan_cmp_impl {
  typedef T type;
  static __device__ __forceinline__ T apply(T v) { return v; }
};
template <class T> struct scan_cmp_impl<T, true> {
  typedef typename scan_conditional<scan_int_traits<T>::is_signed, int, unsigned>::type type;
  static __device__ __forceinline__ type apply(T v) {
    type w = (type)v;
#ifdef __CUDA_ARCH__
    if (scan_int_traits<T>::is_signed) {
      asm("bfe.s32 %0, %1, 0, %2;" : "=r"(w) : "r"(w), "n"((int)sizeof(T) * 8));
    } else {
      asm("bfe.u32 %0, %1, 0, %2;" : "=r"(w) : "r"(w), "n"((int)sizeof(T) * 8));
    }
#endif
    return w;
  }
};
template <class T> __device__ __forceinline__ typename scan_cmp_impl<T>::type scan_cmp_value(T v) {
  return scan_cmp_impl<T>::apply(v);
}

template <class T> struct scan_is_narrow_signed { static constexpr bool value = false; };
template <> struct scan_is_narrow_signed<signed char> { static constexpr bool value = true; };
template <> struct scan_is_narrow_signed<short> { static constexpr bool value = true; };

// The two's complement bits of v as the unsigned type U, for a cast. From an
// 8- or 16-bit signed v this is not done by sign extension (bfe.s32): ptxas
// 13.0 compiles `cvt.rn.f64.u32` of a bfe.s32 of 8 bits as a conversion of a
// *signed* byte (I2F.F64.S8), so `(-77i8 as u32) as f64` came out -77.0 on
// the H200. The low bits and the sign bit are taken apart and recombined
// (low - sign * 2^bits), which ptxas does not fold into a narrow signed
// operand.
template <class U, class V, bool = scan_is_narrow_signed<V>::value> struct scan_bits_as_impl {
  static __device__ __forceinline__ U apply(V v) { return (U)scan_cmp_value(v); }
};
template <class U, class V> struct scan_bits_as_impl<U, V, true> {
  static __device__ __forceinline__ U apply(V v) {
#ifdef __CUDA_ARCH__
    const unsigned w = (unsigned)(int)v;
    unsigned low, sign;
    asm("bfe.u32 %0, %1, 0, %2;" : "=r"(low) : "r"(w), "n"((int)sizeof(V) * 8));
    asm("bfe.u32 %0, %1, %2, 1;" : "=r"(sign) : "r"(w), "n"((int)sizeof(V) * 8 - 1));
    typedef typename scan_conditional<(sizeof(U) > 4), U, unsigned>::type Wide;
    return (U)((Wide)low - ((Wide)sign << (sizeof(V) * 8)));
#else
    return (U)v;
#endif
  }
};

// The value of type T whose bits are the low bits of v: Rust's `as` between
// integers, and how every integer result below is narrowed to its type.
//
// Narrow signed types need care. Optimised CUDA 13.0 builds mis-handle 8-
// and 16-bit signed values that wrap: with a == -32768, (short)(0u -
// (unsigned)a) came out +32768 on the H200 (tests/generated_operators.rs
// found it; an unoptimised build and host compilers agree with Rust). Their
// sign extension is therefore done in inline PTX, which NVVM cannot reason
// about; the other types narrow by the unsigned type of their width
// (modular by the standard) and a reinterpretation of the bits.
template <class T, int = scan_is_narrow_signed<T>::value ? 2 : scan_is_int<T>::value ? 1 : 0>
struct scan_wrap_impl {
  template <class V> static __device__ __forceinline__ T apply(V v) { return (T)v; }
};
template <class T> struct scan_wrap_impl<T, 1> {
  template <class V> static __device__ __forceinline__ T apply(V v) {
    typedef typename scan_int_traits<T>::unsigned_type U;
    const U bits = scan_bits_as_impl<U, V>::apply(v);
    T t;
    memcpy(&t, &bits, sizeof(T));
    return t;
  }
};
template <class T> struct scan_wrap_impl<T, 2> {
  template <class V> static __device__ __forceinline__ T apply(V v) {
    const unsigned low = (unsigned)scan_cmp_value(v);
#ifdef __CUDA_ARCH__
    int r;
    asm("bfe.s32 %0, %1, 0, %2;" : "=r"(r) : "r"(low), "n"((int)sizeof(T) * 8));
    return (T)r;  // in range: exact
#else
    typedef typename scan_int_traits<T>::unsigned_type U;
    const U bits = (U)low;
    T t;
    memcpy(&t, &bits, sizeof(T));
    return t;
#endif
  }
};
template <class T, class V> __device__ __forceinline__ T scan_wrap(V v) { return scan_wrap_impl<T>::apply(v); }

#define SCAN_COMPARISON(NAME, OP)                                                 \
  template <class A, class B> __device__ __forceinline__ bool NAME(A a, B b) {    \
    return scan_cmp_value(a) OP scan_cmp_value(b);                                \
  }
SCAN_COMPARISON(scan_eq, ==)
SCAN_COMPARISON(scan_ne, !=)
SCAN_COMPARISON(scan_lt, <)
SCAN_COMPARISON(scan_le, <=)
SCAN_COMPARISON(scan_gt, >)
SCAN_COMPARISON(scan_ge, >=)
#undef SCAN_COMPARISON

template <class T> struct scan_remove_cvref { typedef T type; };
template <class T> struct scan_remove_cvref<const T> { typedef T type; };
template <class T> struct scan_remove_cvref<T&> { typedef T type; };
template <class T> struct scan_remove_cvref<const T&> { typedef T type; };

// An untyped Rust literal takes the type of its typed sibling: `x.a * 2`
// becomes `scan_mul(x.a, scan_like(x.a, 2))`.
template <class T, class V>
__device__ __forceinline__ typename scan_remove_cvref<T>::type scan_like(const T&, V v) {
  return (typename scan_remove_cvref<T>::type)v;
}
// An untyped float literal is printed twice, rounded once to each type, so
// that an `f32` sibling never sees a double-rounded value.
__device__ __forceinline__ float scan_like_float(float, float as_f32, double) { return as_f32; }
__device__ __forceinline__ double scan_like_float(double, float, double as_f64) { return as_f64; }
// The type tag of a literal no typed sibling fixes: Rust's defaults, `i32`
// for integers and `f64` for floats, which are C++'s too. Untyped `let`
// bindings are generic lambdas of such a tag (`k(tag)`): each use computes
// the value at the type rustc inferred for it.
struct scan_default_type {};
template <class V>
__device__ __forceinline__ V scan_like(const scan_default_type&, V v) { return v; }
__device__ __forceinline__ double scan_like_float(scan_default_type, float, double as_f64) { return as_f64; }

// ---------------------------------------------------------------------------
// Arithmetic: integers wrap (two's complement), floats are IEEE and never
// contracted into FMAs (the _rn intrinsics are exempt from contraction).
// ---------------------------------------------------------------------------

#define SCAN_WRAPPING(NAME, OP)                                                \
  template <class T> __device__ __forceinline__ T NAME(T a, T b) {            \
    typedef typename scan_int_traits<T>::wide_unsigned_type W;                \
    return scan_wrap<T>((W)a OP (W)b);                                        \
  }
SCAN_WRAPPING(scan_add, +)
SCAN_WRAPPING(scan_sub, -)
SCAN_WRAPPING(scan_mul, *)
#undef SCAN_WRAPPING
__device__ __forceinline__ float scan_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float scan_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float scan_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double scan_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double scan_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double scan_mul(double a, double b) { return __dmul_rn(a, b); }

// Integer division never traps: x / 0 == 0 and x % 0 == 0; MIN / -1 wraps to
// MIN and MIN % -1 == 0 (Rust's wrapping_div / wrapping_rem otherwise).
template <class T> __device__ __forceinline__ T scan_div(T a, T b) {
  if (scan_eq(b, (T)0)) return 0;
  if (scan_int_traits<T>::is_signed && scan_eq(a, scan_int_traits<T>::min) && scan_eq(b, (T)-1)) return a;
  return scan_wrap<T>(scan_cmp_value(a) / scan_cmp_value(b));
}
template <class T> __device__ __forceinline__ T scan_rem(T a, T b) {
  if (scan_eq(b, (T)0)) return 0;
  if (scan_int_traits<T>::is_signed && scan_eq(b, (T)-1)) return 0;
  return scan_wrap<T>(scan_cmp_value(a) % scan_cmp_value(b));
}
__device__ __forceinline__ float scan_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double scan_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float scan_rem(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double scan_rem(double a, double b) { return fmod(a, b); }

template <class T> __device__ __forceinline__ T scan_neg(T a) { return scan_sub((T)0, a); }
__device__ __forceinline__ float scan_neg(float a) { return -a; }
__device__ __forceinline__ double scan_neg(double a) { return -a; }

// `!` is logical on bool and bitwise on integers.
template <class T> __device__ __forceinline__ T scan_not(T a) { return scan_wrap<T>(~a); }
__device__ __forceinline__ bool scan_not(bool a) { return !a; }

template <class T> __device__ __forceinline__ T scan_bitand(T a, T b) { return scan_wrap<T>(a & b); }
template <class T> __device__ __forceinline__ T scan_bitor(T a, T b) { return scan_wrap<T>(a | b); }
template <class T> __device__ __forceinline__ T scan_bitxor(T a, T b) { return scan_wrap<T>(a ^ b); }

// Shifts take the amount modulo the bit width (Rust's wrapping_shl/shr);
// `>>` is arithmetic on signed types.
template <class T, class S> __device__ __forceinline__ T scan_shl(T a, S amount) {
  typedef typename scan_int_traits<T>::wide_unsigned_type W;
  return scan_wrap<T>((W)a << ((unsigned)amount & (scan_int_traits<T>::bits - 1)));
}
template <class T, class S> __device__ __forceinline__ T scan_shr(T a, S amount) {
  return scan_wrap<T>(scan_cmp_value(a) >> ((unsigned)amount & (scan_int_traits<T>::bits - 1)));
}
template <class T> __device__ __forceinline__ T scan_rotate_left(T a, unsigned n) {
  typedef typename scan_int_traits<T>::unsigned_type U;
  const unsigned bits = scan_int_traits<T>::bits;
  n &= bits - 1;
  if (n == 0) return a;
  return scan_wrap<T>(scan_shl((U)a, n) | scan_shr((U)a, bits - n));
}
template <class T> __device__ __forceinline__ T scan_rotate_right(T a, unsigned n) {
  return scan_rotate_left(a, scan_int_traits<T>::bits - (n & (scan_int_traits<T>::bits - 1)));
}

// ---------------------------------------------------------------------------
// Numeric methods.
// ---------------------------------------------------------------------------

// Integer min/max by comparison; float min/max ignore a NaN operand, as
// Rust's f32::min/max do (fminf/fmaxf have the same rule). Of +0.0 and
// -0.0 either may come back: Rust leaves that sign unspecified, and CUDA's
// fminf returns -0.0 where Rust's x86-64 code returns the first operand.
template <class T> __device__ __forceinline__ T scan_min(T a, T b) { return scan_lt(b, a) ? b : a; }
template <class T> __device__ __forceinline__ T scan_max(T a, T b) { return scan_lt(a, b) ? b : a; }
__device__ __forceinline__ float scan_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ float scan_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double scan_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ double scan_max(double a, double b) { return fmax(a, b); }

// Integer abs wraps (abs(MIN) == MIN), as wrapping_abs. Not written `a < 0
// ? -a : a`: NVVM turns that into its abs intrinsic, and optimised CUDA 13.0
// code on the H200 then took abs(i64::MIN) for non-negative. The sign mask
// comes from inline PTX instead, and (a ^ mask) - mask is plain arithmetic.
template <class T> __device__ __forceinline__ T scan_abs(T a) {
  if (!scan_int_traits<T>::is_signed) return a;
  typedef typename scan_int_traits<T>::wide_unsigned_type W;
  const W bits = (W)scan_cmp_value(a);
  W mask;
#ifdef __CUDA_ARCH__
  if (sizeof(W) == 8) {
    unsigned long long m;
    asm("shr.s64 %0, %1, 63;" : "=l"(m) : "l"((unsigned long long)bits));
    mask = (W)m;
  } else {
    unsigned m;
    asm("shr.s32 %0, %1, 31;" : "=r"(m) : "r"((unsigned)bits));
    mask = (W)m;
  }
#else
  // The same arithmetic shift (GCC and Clang shift signed values arithmetically).
  typedef typename scan_conditional<sizeof(W) == 8, long long, int>::type S;
  mask = (W)((S)bits >> (sizeof(W) * 8 - 1));
#endif
  return scan_wrap<T>((bits ^ mask) - mask);
}
// Float abs clears the sign bit (as Rust's does, NaN payloads kept). Not
// fabsf: ptxas 13.0 takes the result of its FABS for never NaN and compiled
// `x.abs() > -1.0` (and `>= 0.0`) as true for a NaN x.
__device__ __forceinline__ float scan_abs(float a) { return __int_as_float(__float_as_int(a) & 0x7fffffff); }
__device__ __forceinline__ double scan_abs(double a) {
  return __longlong_as_double(__double_as_longlong(a) & 0x7fffffffffffffffll);
}

template <class T> __device__ __forceinline__ T scan_saturating_add(T a, T b) {
  const T r = scan_add(a, b);
  if (!scan_int_traits<T>::is_signed) return scan_lt(r, a) ? scan_int_traits<T>::max : r;
  if ((scan_gt(b, (T)0) && scan_lt(r, a)) || (scan_lt(b, (T)0) && scan_gt(r, a)))
    return scan_gt(b, (T)0) ? scan_int_traits<T>::max : scan_int_traits<T>::min;
  return r;
}
template <class T> __device__ __forceinline__ T scan_saturating_sub(T a, T b) {
  const T r = scan_sub(a, b);
  if (!scan_int_traits<T>::is_signed) return scan_lt(a, b) ? (T)0 : r;
  if ((scan_lt(b, (T)0) && scan_lt(r, a)) || (scan_gt(b, (T)0) && scan_gt(r, a)))
    return scan_lt(b, (T)0) ? scan_int_traits<T>::max : scan_int_traits<T>::min;
  return r;
}
// Narrow types multiply exactly in 64 bits; 64-bit types use the high word.
template <class T> __device__ __forceinline__ T scan_saturating_mul(T a, T b) {
  if (scan_int_traits<T>::is_signed) {
    const long long p = (long long)a * (long long)b;
    if (p > (long long)scan_int_traits<T>::max) return scan_int_traits<T>::max;
    if (p < (long long)scan_int_traits<T>::min) return scan_int_traits<T>::min;
    return (T)p;
  }
  const unsigned long long p = (unsigned long long)a * (unsigned long long)b;
  return p > (unsigned long long)scan_int_traits<T>::max ? scan_int_traits<T>::max : (T)p;
}
template <> __device__ __forceinline__ unsigned long long scan_saturating_mul(unsigned long long a, unsigned long long b) {
  return __umul64hi(a, b) != 0 ? scan_int_traits<unsigned long long>::max : a * b;
}
template <> __device__ __forceinline__ long long scan_saturating_mul(long long a, long long b) {
  const long long lo = (long long)((unsigned long long)a * (unsigned long long)b);
  const long long hi = __mul64hi(a, b);
  if (hi == (lo >> 63)) return lo;  // the 128-bit product fits in 64 bits
  return ((a < 0) != (b < 0)) ? scan_int_traits<long long>::min : scan_int_traits<long long>::max;
}

template <class T> __device__ __forceinline__ unsigned scan_count_ones(T a) {
  typedef typename scan_int_traits<T>::unsigned_type U;
  return sizeof(T) == 8 ? (unsigned)__popcll((unsigned long long)(U)a) : (unsigned)__popc((unsigned)(U)a);
}
template <class T> __device__ __forceinline__ unsigned scan_leading_zeros(T a) {
  typedef typename scan_int_traits<T>::unsigned_type U;
  if (sizeof(T) == 8) return (unsigned)__clzll((long long)(U)a);
  return (unsigned)__clz((int)(unsigned)(U)a) - (32 - scan_int_traits<T>::bits);
}
template <class T> __device__ __forceinline__ unsigned scan_trailing_zeros(T a) {
  typedef typename scan_int_traits<T>::unsigned_type U;
  if ((U)a == 0) return scan_int_traits<T>::bits;
  if (sizeof(T) == 8) return (unsigned)__ffsll((long long)(U)a) - 1;
  return (unsigned)__ffs((int)(unsigned)(U)a) - 1;
}

#define SCAN_FLOAT_UNARY(NAME, F32, F64)                                       \
  __device__ __forceinline__ float NAME(float a) { return F32(a); }           \
  __device__ __forceinline__ double NAME(double a) { return F64(a); }
SCAN_FLOAT_UNARY(scan_sqrt, sqrtf, sqrt)
SCAN_FLOAT_UNARY(scan_cbrt, cbrtf, cbrt)
SCAN_FLOAT_UNARY(scan_exp, expf, exp)
SCAN_FLOAT_UNARY(scan_exp2, exp2f, exp2)
SCAN_FLOAT_UNARY(scan_ln, logf, log)
SCAN_FLOAT_UNARY(scan_log2, log2f, log2)
SCAN_FLOAT_UNARY(scan_log10, log10f, log10)
SCAN_FLOAT_UNARY(scan_sin, sinf, sin)
SCAN_FLOAT_UNARY(scan_cos, cosf, cos)
SCAN_FLOAT_UNARY(scan_tanh, tanhf, tanh)
SCAN_FLOAT_UNARY(scan_floor, floorf, floor)
SCAN_FLOAT_UNARY(scan_ceil, ceilf, ceil)
SCAN_FLOAT_UNARY(scan_round, roundf, round)  // half away from zero, as Rust
SCAN_FLOAT_UNARY(scan_trunc, truncf, trunc)
#undef SCAN_FLOAT_UNARY
__device__ __forceinline__ float scan_mul_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double scan_mul_add(double a, double b, double c) { return fma(a, b, c); }
// A signaling NaN operand gives a NaN (IEEE 754: every operation on one
// signals and returns a quiet NaN), as the C library Rust calls does, even
// where a quiet NaN would not (pow(NaN, 0) == 1, hypot(inf, NaN) == inf).
// A NaN whose quiet bit (the mantissa's highest) is clear.
__device__ __forceinline__ bool scan_is_signaling(float a) {
  return a != a && ((unsigned)__float_as_int(a) & 0x00400000u) == 0;
}
__device__ __forceinline__ bool scan_is_signaling(double a) {
  return a != a && ((unsigned long long)__double_as_longlong(a) & 0x0008000000000000ull) == 0;
}
__device__ __forceinline__ float scan_powf(float a, float b) {
  return scan_is_signaling(a) || scan_is_signaling(b) ? a + b : powf(a, b);
}
__device__ __forceinline__ double scan_powf(double a, double b) {
  return scan_is_signaling(a) || scan_is_signaling(b) ? a + b : pow(a, b);
}
__device__ __forceinline__ float scan_hypot(float a, float b) {
  return scan_is_signaling(a) || scan_is_signaling(b) ? a + b : hypotf(a, b);
}
__device__ __forceinline__ double scan_hypot(double a, double b) {
  return scan_is_signaling(a) || scan_is_signaling(b) ? a + b : hypot(a, b);
}
__device__ __forceinline__ float scan_copysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double scan_copysign(double a, double b) { return copysign(a, b); }
// powi by repeated squaring, the algorithm of compiler-rt's __powisf2 that
// Rust's powi calls.
template <class T> __device__ __forceinline__ T scan_powi(T a, int n) {
  const bool recip = n < 0;
  T r = 1;
  for (;;) {
    if (n & 1) r = scan_mul(r, a);
    n /= 2;
    if (n == 0) break;
    a = scan_mul(a, a);
  }
  return recip ? scan_div((T)1, r) : r;
}
template <class T> __device__ __forceinline__ bool scan_is_nan(T a) { return a != a; }
// a - a is NaN exactly when a is NaN or infinite, and 0 otherwise.
template <class T> __device__ __forceinline__ bool scan_is_finite(T a) { return !scan_is_nan(a - a); }
template <class T> __device__ __forceinline__ bool scan_is_infinite(T a) { return !scan_is_nan(a) && scan_is_nan(a - a); }

// ---------------------------------------------------------------------------
// `as` casts. Integer to integer truncates or extends, integer to float and
// f64 to f32 round to nearest: C++ already agrees. Float to integer is the
// exception: Rust saturates and maps NaN to 0, C++ leaves it undefined.
// ---------------------------------------------------------------------------

// Which cast: 1 float to integer, 2 integer (or bool) to integer, 0 the rest.
template <class To, class From,
          int = scan_is_float<From>::value && !scan_is_float<To>::value ? 1 : scan_is_int<To>::value ? 2 : 0>
struct scan_cast_impl {
  static __device__ __forceinline__ To apply(From v) { return (To)scan_cmp_value(v); }  // see scan_cmp_value
};
template <class To, class From> struct scan_cast_impl<To, From, 1> {
  static __device__ __forceinline__ To apply(From v) {
    if (v != v) return (To)0;
    // MIN and MAX + 1 are powers of two (or zero), exact in any float type.
    const From lowest = (From)scan_int_traits<To>::min;
    const From above = (From)2 * (From)(scan_int_traits<To>::max / 2 + 1);
    if (v <= lowest) return scan_int_traits<To>::min;
    if (v >= above) return scan_int_traits<To>::max;
    return (To)v;  // in range: truncates toward zero
  }
};
template <class From> struct scan_cast_impl<bool, From, 1> {};  // Rust has no float-to-bool cast
// Integers truncate to the target's width (see scan_wrap).
template <class To, class From> struct scan_cast_impl<To, From, 2> {
  static __device__ __forceinline__ To apply(From v) { return scan_wrap<To>(v); }
};
template <class To, class From> __device__ __forceinline__ To scan_cast(From v) {
  return scan_cast_impl<To, From>::apply(v);
}

// ---------------------------------------------------------------------------
// Data movement.
// ---------------------------------------------------------------------------

// Warp shuffle of any trivially copyable type, one 32-bit word at a time;
// elements whose size is not a multiple of 4 travel in a zero-padded buffer.
// `shuffle` moves one word (all 32 lanes call it).
template <class T, class Shuffle> __device__ __forceinline__ T scan_shfl_words(const T& value, Shuffle shuffle) {
  constexpr int words = (sizeof(T) + 3) / 4;
  unsigned buffer[words] = {};
  memcpy(buffer, &value, sizeof(T));
#pragma unroll
  for (int w = 0; w < words; ++w) buffer[w] = shuffle(buffer[w]);
  T result;
  memcpy(&result, buffer, sizeof(T));
  return result;
}

template <class T> __device__ __forceinline__ T scan_shfl_up(const T& value, unsigned delta) {
  return scan_shfl_words(value, [delta](unsigned word) { return __shfl_up_sync(0xffffffffu, word, delta); });
}

template <class T> __device__ __forceinline__ T scan_shfl_down(const T& value, unsigned delta) {
  return scan_shfl_words(value, [delta](unsigned word) { return __shfl_down_sync(0xffffffffu, word, delta); });
}

template <class T> __device__ __forceinline__ T scan_shfl_idx(const T& value, int source_lane) {
  return scan_shfl_words(value, [source_lane](unsigned word) { return __shfl_sync(0xffffffffu, word, source_lane); });
}

// How the kernels hold an element between combines. Split into its fields,
// a value takes a register per field of up to 4 bytes: an element of many
// bytes, half-words or bools takes several times the registers its size
// needs (a struct of 200 bytes, 200 of them, for each of the several values
// a look-back keeps), and spills. Where the layout says so (its
// packed_element, kernels_gen::packed_element), the operator's policy
// holds such an element as its bytes in 32-bit words, scan_packed<E>, and
// takes it apart only inside combine: its T is scan_held<E, true>::type.
// scan_packed has E's size and alignment, so it is E's bytes in memory
// too; kernels move it as they move any T.
#pragma pack(push, 1)
template <unsigned Words, unsigned Tail> struct scan_packed_bytes {
  unsigned words[Words];
  unsigned char tail[Tail];
};
template <unsigned Words> struct scan_packed_bytes<Words, 0> {
  unsigned words[Words];
};
#pragma pack(pop)
template <class E> struct alignas(alignof(E)) scan_packed : scan_packed_bytes<sizeof(E) / 4, sizeof(E) % 4> {};

template <class E, bool Packed> struct scan_held {
  typedef E type;
  static __device__ __forceinline__ E hold(const E& value) { return value; }
  static __device__ __forceinline__ E fields(const E& held) { return held; }
};
template <class E> struct scan_held<E, true> {
  typedef scan_packed<E> type;
  static_assert(sizeof(type) == sizeof(E) && alignof(type) == alignof(E), "a packed element is the element's bytes");
  static __device__ __forceinline__ type hold(const E& value) {
    type held;
    memcpy(&held, &value, sizeof(E));
    return held;
  }
  static __device__ __forceinline__ E fields(const type& held) {
    E value;
    memcpy(&value, &held, sizeof(E));
    return value;
  }
};

// Stores one field into another; array fields are copied element by element
// (C++ arrays cannot be assigned).
template <class T> __device__ __forceinline__ void scan_assign(T& to, const T& from) { to = from; }
template <class T, int N> __device__ __forceinline__ void scan_assign(T (&to)[N], const T (&from)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) to[i] = from[i];
}

// Template arguments of the scans: how head flags are stored (or that
// segments are rows of a fixed length, or given by offsets or by keys, with
// no flags), how a warp
// stops at a head (segments.cuh), and what a scan writes at each element:
// the inclusive partial, the exclusive one (the seed at heads), or the
// lifted exclusive prefix (the partial before the element even at heads:
// the carry into it; without heads the same as exclusive).
enum scan_flag_format { scan_flags_bytes = 0, scan_flags_bits = 1, scan_fixed_rows = 2, scan_segment_offsets = 3, scan_segment_keys = 4 };

// The segments' start offsets (CSR row pointers), a kernel parameter by
// value: `count` offsets of `width` bytes (4 or 8), ascending, each at
// most the input's length (the host checks this before any launch), and
// their index (`scan_index_offsets`) of `index_width`-byte entries (4 or
// 8): index[j] is the first offset at or after element j << index_shift.
struct scan_offsets {
  const void* offsets;
  unsigned long long count;
  unsigned long long width;
  const void* index;
  unsigned long long index_width;
  unsigned long long index_shift;
};

// The segments' keys, a kernel parameter by value: one key per element of
// `width` bytes (1, 2, 4 or 8), compared bit for bit; element i starts a
// segment where its key differs from element i - 1's.
struct scan_keys {
  const void* keys;
  unsigned long long width;
};
enum scan_segmented_strategy { scan_segmented_transform = 0, scan_segmented_indexing = 1 };
enum scan_mode { scan_inclusive = 0, scan_exclusive = 1, scan_exclusive_carry = 2 };

// Tile status of the single-pass scans. A tile publishes its state with a
// status word (epoch << 2) | state: a word from an earlier scan (another
// epoch) reads as "not ready", so the status never needs clearing between
// scans.
enum scan_tile_state { scan_tile_not_ready = 0, scan_tile_aggregate = 1, scan_tile_prefix = 2 };

// A tile's status entry, by its size in bytes (kernels_gen::tile_status_bytes
// chooses it from the element size; the layout carries it):
//  * 8: elements of at most 4 bytes share one 64-bit word with the status;
//  * 16: elements of at most 12 bytes share one 128-bit word (ld/st .b128,
//    one memory operation since PTX 8.3);
//  * 32 and up: larger elements take a 128-bit chunk per 12 bytes, each a
//    copy of the status word and 12 bytes of the value.
// A packed word is read and written as a whole, so a reader that sees the
// state sees the value that came with it: no fences, one round trip per
// poll.
//
// Packed entries: tile t's entry starts Stride bytes after tile t - 1's
// (kernels_gen::tile_status_stride, the layout's tile_status_stride: 64
// bytes, or the entry rounded up to a multiple of 64). Every waiting tile
// polls the entries of its most recent predecessors, so packed densely the
// newest entries are a few hot 128-byte lines that every look-back and
// publish queues on; spread out, they fall in more lines and L2 slices. In
// a stand-alone u32 sum on the H200 (2^28 elements, 8 blocks per SM,
// experiments/single_pass_status.cu) entries 64 bytes apart took the single
// pass from 66% to 78% of copy speed (32 bytes: 77%, 128: 78%, 256: 77%).
//
// Elements over 12 bytes: Chunks 128-bit chunks, each written as a whole
// and each carrying the status word. A poll reads them all at once (one
// round trip, no fence, as for the packed words); chunks of different
// publishes (a tile's aggregate overwritten by its prefix as they are read,
// or an earlier scan's) have different status words, and such an entry
// reads as not ready until the writer's last chunk lands. Equal words mean
// one publish: a tile publishes each state once per scan, and the launch
// sweep (launch.cuh) zeroes every chunk's word of unused entries long
// before an epoch comes back, so no chunk left from an earlier lap of the
// epochs can match a new one. The chunks lie chunk-major in groups of 32
// tiles (each group 32 · Stride bytes): a look-back lane reads one tile of
// a window of 32, so each of the warp's loads of one chunk reads 512
// contiguous bytes (at most two groups' lines) rather than a line a lane.
// On the H200 that took 256-byte affine maps from 54% to 61% of copy speed,
// and 16- and 24-byte ones from 87-89% to 94-96% (BENCHMARKS.md).
//
// scan_status_chunk_offset: where 16-byte chunk `chunk` of tile `tile`'s
// entry lies, in bytes from the status array's start, as
// kernels_gen::status_chunk_offset states it for the host. The chunked
// entries' reads and writes, every sweep and the column scans' words go
// through it; the packed specializations below address t · Stride, its
// packed case, themselves:
//  * packed entries (Bytes 8 or 16, one chunk): t · Stride;
//  * chunked entries (Bytes 32 and up), tile 32g + j: chunk c at
//    32g · Stride + 16 · (32c + j). The array holds a whole number of
//    groups (kernels_gen::status_capacity).
// The group: kernels_gen::STATUS_GROUP_TILES (a test checks this copy).
constexpr unsigned scan_status_group_tiles = 32;
template <unsigned Bytes, unsigned Stride>
__device__ __forceinline__ unsigned long long scan_status_chunk_offset(unsigned long long tile, unsigned chunk) {
  constexpr unsigned long long group = scan_status_group_tiles;
  if constexpr (Bytes < 32) {
    return tile * Stride + 16ull * chunk;
  } else {
    return tile / group * (group * Stride) + 16ull * group * chunk + tile % group * 16ull;
  }
}

template <class T, unsigned Bytes, unsigned Stride> struct scan_tile_status {
  static constexpr unsigned chunks = Bytes / 16;
  static_assert(Bytes % 16 == 0 && sizeof(T) <= 12 * chunks, "the chunks hold the value");
  static_assert(Stride % 16 == 0 && Stride >= Bytes, "the entry fits its stride");
  unsigned long long* words;
  __device__ __forceinline__ scan_tile_status(void* status) : words((unsigned long long*)status) {}
  __device__ __forceinline__ void publish(unsigned long long tile, unsigned status, const T& value) {
    unsigned w[3 * chunks] = {};
    memcpy(w, &value, sizeof(T));
#pragma unroll
    for (unsigned c = 0; c < chunks; ++c) {
      const unsigned long long lo = ((unsigned long long)w[3 * c] << 32) | status;
      const unsigned long long hi = ((unsigned long long)w[3 * c + 2] << 32) | w[3 * c + 1];
      asm volatile("{\n  .reg .b128 w;\n  mov.b128 w, {%1, %2};\n  st.relaxed.gpu.global.b128 [%0], w;\n}" : : "l"(chunk(tile, c)), "l"(lo), "l"(hi) : "memory");
    }
  }
  __device__ __forceinline__ unsigned long long* chunk(unsigned long long tile, unsigned c) const {
    return (unsigned long long*)((unsigned char*)words + scan_status_chunk_offset<Bytes, Stride>(tile, c));
  }
  // The status word of the entry's first chunk alone: one 4-byte load, to
  // learn whether a tile is ready before reading its whole entry.
  __device__ __forceinline__ unsigned poll_word(unsigned long long tile) const {
    unsigned word;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(word) : "l"(chunk(tile, 0)) : "memory");
    return word;
  }
  // The status word when every chunk carries the same one, else 0 (not
  // ready); `value` receives the value the chunks hold.
  __device__ __forceinline__ unsigned poll(unsigned long long tile, T& value) const {
    unsigned w[3 * chunks];
    unsigned first = 0;
    bool same = true;
#pragma unroll
    for (unsigned c = 0; c < chunks; ++c) {
      unsigned long long lo, hi;
      asm volatile("{\n  .reg .b128 w;\n  ld.relaxed.gpu.global.b128 w, [%2];\n  mov.b128 {%0, %1}, w;\n}" : "=l"(lo), "=l"(hi) : "l"(chunk(tile, c)) : "memory");
      if (c == 0) first = (unsigned)lo;
      same = same && (unsigned)lo == first;
      w[3 * c] = (unsigned)(lo >> 32);
      w[3 * c + 1] = (unsigned)hi;
      w[3 * c + 2] = (unsigned)(hi >> 32);
    }
    memcpy(&value, w, sizeof(T));
    return same ? first : 0u;
  }
};

template <class T, unsigned Stride> struct scan_tile_status<T, 8, Stride> {
  static constexpr unsigned chunks = 1;  // one load reads the whole entry
  unsigned long long* words;
  __device__ __forceinline__ scan_tile_status(void* status) : words((unsigned long long*)status) {}
  __device__ __forceinline__ void publish(unsigned long long tile, unsigned status, const T& value) {
    unsigned bits = 0;
    memcpy(&bits, &value, sizeof(T));
    const unsigned long long word = ((unsigned long long)bits << 32) | status;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(words + tile * (Stride / 8)), "l"(word) : "memory");
  }
  // The status word of `tile`; `value` receives the value published with it.
  __device__ __forceinline__ unsigned poll(unsigned long long tile, T& value) const {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(words + tile * (Stride / 8)) : "memory");
    const unsigned bits = (unsigned)(word >> 32);
    memcpy(&value, &bits, sizeof(T));
    return (unsigned)word;
  }
};

template <class T, unsigned Stride> struct scan_tile_status<T, 16, Stride> {
  static constexpr unsigned chunks = 1;  // one load reads the whole entry
  unsigned long long* words;  // the first two of each entry
  __device__ __forceinline__ scan_tile_status(void* status) : words((unsigned long long*)status) {}
  __device__ __forceinline__ void publish(unsigned long long tile, unsigned status, const T& value) {
    unsigned w[4] = {status, 0u, 0u, 0u};
    memcpy(w + 1, &value, sizeof(T));
    const unsigned long long lo = ((unsigned long long)w[1] << 32) | w[0];
    const unsigned long long hi = ((unsigned long long)w[3] << 32) | w[2];
    asm volatile("{\n  .reg .b128 w;\n  mov.b128 w, {%1, %2};\n  st.relaxed.gpu.global.b128 [%0], w;\n}" : : "l"(words + tile * (Stride / 8)), "l"(lo), "l"(hi) : "memory");
  }
  __device__ __forceinline__ unsigned poll(unsigned long long tile, T& value) const {
    unsigned long long lo, hi;
    asm volatile("{\n  .reg .b128 w;\n  ld.relaxed.gpu.global.b128 w, [%2];\n  mov.b128 {%0, %1}, w;\n}" : "=l"(lo), "=l"(hi) : "l"(words + tile * (Stride / 8)) : "memory");
    const unsigned w[3] = {(unsigned)(lo >> 32), (unsigned)hi, (unsigned)(hi >> 32)};
    memcpy(&value, w, sizeof(T));
    return (unsigned)lo;
  }
};

// ---------------------------------------------------------------------------
// The pipelined single pass (sm_90 and newer): shape, shared memory, and the
// Hopper primitives it is built from.
// ---------------------------------------------------------------------------

// Its shape and shared memory come with the program's layout (Shape<Op>);
// what follows are the primitives.

__host__ __device__ constexpr unsigned scan_round_up(unsigned long long x, unsigned long long to) { return (unsigned)((x + to - 1) / to * to); }

// The dynamic shared memory of every kernel that uses it.
extern __shared__ __align__(128) unsigned char scan_dynamic_shared[];

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned scan_shared_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// mbarriers (shared-memory barriers with a phase that completes after
// `count` arrivals and, for bulk copies, the expected bytes).
__device__ __forceinline__ void scan_mbarrier_init(unsigned long long* barrier, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(scan_shared_address(barrier)), "r"(count) : "memory");
}
__device__ __forceinline__ void scan_mbarrier_arrive(unsigned long long* barrier) {
  asm volatile("{\n  .reg .b64 state;\n  mbarrier.arrive.shared::cta.b64 state, [%0];\n}" : : "r"(scan_shared_address(barrier)) : "memory");
}
__device__ __forceinline__ void scan_mbarrier_arrive_expect_bytes(unsigned long long* barrier, unsigned bytes) {
  asm volatile("{\n  .reg .b64 state;\n  mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}" : : "r"(scan_shared_address(barrier)), "r"(bytes) : "memory");
}
// Waits until the phase of parity `parity` has completed (acquire).
__device__ __forceinline__ void scan_mbarrier_wait(unsigned long long* barrier, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n  .reg .pred p;\n  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n  selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(scan_shared_address(barrier)), "r"(parity) : "memory");
  } while (!done);
}
// One-dimensional bulk copies (TMA): global to shared, completing on a
// barrier; shared to global, completing in bulk groups. Addresses are
// 16-byte aligned and sizes multiples of 16.
__device__ __forceinline__ void scan_bulk_load(void* shared, const void* global, unsigned bytes, unsigned long long* barrier) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               : : "r"(scan_shared_address(shared)), "l"(global), "r"(bytes), "r"(scan_shared_address(barrier)) : "memory");
}
// A store joins this thread's open bulk group; scan_bulk_commit closes it.
__device__ __forceinline__ void scan_bulk_store(void* global, const void* shared, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" : : "l"(global), "r"(scan_shared_address(shared)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void scan_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" : : : "memory"); }
// Waits until at most this thread's newest bulk store group still reads
// shared memory.
__device__ __forceinline__ void scan_bulk_wait_read_all_but_newest() { asm volatile("cp.async.bulk.wait_group.read 1;" : : : "memory"); }
// Waits until none of this thread's bulk store groups reads shared memory
// any more.
__device__ __forceinline__ void scan_bulk_wait_read_all() { asm volatile("cp.async.bulk.wait_group.read 0;" : : : "memory"); }
// Waits until every bulk store of this thread has been written.
__device__ __forceinline__ void scan_bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" : : : "memory"); }
// Makes this thread's ordinary shared-memory writes visible to bulk copies.
__device__ __forceinline__ void scan_fence_shared_for_bulk() { asm volatile("fence.proxy.async.shared::cta;" : : : "memory"); }
__device__ __forceinline__ void scan_fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory"); }
// Synchronises the `threads` threads that use named barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void scan_named_barrier(unsigned id, unsigned threads) { asm volatile("bar.sync %0, %1;" : : "r"(id), "r"(threads) : "memory"); }
#endif

#endif  // GPU_SCAN_PRELUDE
