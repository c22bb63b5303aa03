//! Choosing between the GPU and the CPU: [`Scanner`].

use crate::device::open_device;
use crate::error::{Result, ScanError};
use crate::gpu::{GpuScanner, LawCheck};
use crate::laws;
use cudarc::driver::{CudaStream, DeviceRepr, ValidAsZeroBits};
use scan_core::segmented;
use scan_core::{
    cpu, HostSegmentedCarryOut, HostSegments, IntoScanSpec, ScanKind, ScanOp, ScanSpec, Shape,
};
use std::sync::Arc;

/// Where a [`Scanner`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// A CUDA device.
    Gpu,
    /// All CPU cores (the CPU backend of `scan-core`).
    Cpu,
}

enum Inner<Op: ScanOp> {
    Gpu {
        scanner: Box<GpuScanner<Op>>,
        stream: Arc<CudaStream>,
    },
    /// `fallback`: why [`Scanner::new`] could not use the GPU (`None` for
    /// [`Scanner::cpu`]).
    Cpu { fallback: Option<ScanError> },
}

/// Host-side scans of `&[T]` into `Vec<T>`, on the GPU when one is usable and
/// on the CPU otherwise.
///
/// ```
/// use gpu_scan::prelude::*;
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let mut scanner = Scanner::<Sum>::new();   // GPU if usable, else CPU
/// assert_eq!(scanner.inclusive(&[1, 2, 3]).unwrap(), [1, 3, 6]);
/// println!("ran on {:?}", scanner.backend());
/// if let Some(why) = scanner.fallback_reason() {
///     println!("not on the GPU: {why}");
/// }
/// ```
///
/// Debug builds check on the first call's data that the operator is
/// associative and its `IDENTITY` an identity (see
/// [`Scanner::set_law_checks`]).
pub struct Scanner<Op: ScanOp> {
    inner: Inner<Op>,
    law_check: LawCheck,
}

impl<Op: ScanOp> Scanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// The GPU (device 0) when usable, else the CPU. It prints nothing:
    /// [`Scanner::fallback_reason`] says why it took the CPU, and the
    /// fallback is also logged through `tracing` (level `info`). The
    /// driver's presence is probed once per process.
    pub fn new() -> Self {
        match Self::gpu() {
            Ok(s) => s,
            Err(e) => {
                tracing::info!("gpu-scan: the CPU backend answers ({e})");
                Scanner {
                    inner: Inner::Cpu { fallback: Some(e) },
                    law_check: LawCheck::initial(),
                }
            }
        }
    }

    /// The GPU (device 0), or [`ScanError::GpuUnavailable`] saying why not.
    pub fn gpu() -> Result<Self> {
        let unavailable = |e| ScanError::GpuUnavailable(Box::new(e));
        let ctx = open_device(0).map_err(unavailable)?;
        let stream = ctx.default_stream();
        let mut scanner = GpuScanner::new(&ctx).map_err(unavailable)?;
        // The Scanner checks the host data itself, without a copy back.
        scanner.set_law_checks(false);
        Ok(Scanner {
            inner: Inner::Gpu {
                scanner: Box::new(scanner),
                stream,
            },
            law_check: LawCheck::initial(),
        })
    }

    /// The CPU backend.
    pub fn cpu() -> Self {
        Scanner {
            inner: Inner::Cpu { fallback: None },
            law_check: LawCheck::initial(),
        }
    }

    /// Which backend this scanner uses.
    pub fn backend(&self) -> BackendKind {
        match self.inner {
            Inner::Gpu { .. } => BackendKind::Gpu,
            Inner::Cpu { .. } => BackendKind::Cpu,
        }
    }

    /// Why [`Scanner::new`] chose the CPU ([`ScanError::GpuUnavailable`]
    /// with the cause: no driver, no NVRTC, no device, …); `None` on the
    /// GPU and for [`Scanner::cpu`], which was asked for.
    pub fn fallback_reason(&self) -> Option<&ScanError> {
        match &self.inner {
            Inner::Cpu { fallback } => fallback.as_ref(),
            Inner::Gpu { .. } => None,
        }
    }

    /// The GPU scanner and its stream, when on the GPU.
    pub fn gpu_scanner(&mut self) -> Option<(&mut GpuScanner<Op>, &Arc<CudaStream>)> {
        match &mut self.inner {
            Inner::Gpu { scanner, stream } => Some((scanner, stream)),
            Inner::Cpu { .. } => None,
        }
    }

    /// Debug builds check on the first call with data that the operator is
    /// associative and its `IDENTITY` an identity (with
    /// [`Scanner::check_laws`]) and fail it with
    /// [`ScanError::OperatorLaws`] when not; the CPU backend's answer, which
    /// depends on how the input is split over the cores, would be as wrong
    /// as the GPU's. `false` turns this off; release builds never run it by
    /// themselves.
    pub fn set_law_checks(&mut self, on: bool) {
        self.law_check = LawCheck::requested(on);
    }

    /// Checks the operator's laws on a sample of `input` (96 elements in
    /// runs of 16 from its start to its end): see
    /// [`scan_core::laws::check_laws`] for how elements are compared.
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    ///
    /// #[scan_op(element = u64, identity = 1, op = |a, b| a + b)]  // 1 is no identity for +
    /// struct OffByOne;
    ///
    /// let scanner = Scanner::<OffByOne>::cpu();
    /// let err = scanner.check_laws(&[5, 6, 7]).unwrap_err();
    /// assert!(matches!(err, ScanError::OperatorLaws { .. }));
    /// println!("{err}");
    /// ```
    pub fn check_laws(&self, input: &[Op::Element]) -> Result<()> {
        laws::check_host::<Op>(input)
    }

    fn first_call_law_check(&mut self, input: &[Op::Element]) -> Result<()> {
        if self.law_check == LawCheck::Pending && !input.is_empty() {
            self.check_laws(input)?;
            self.law_check = LawCheck::Done;
        }
        Ok(())
    }

    /// Any scan, the library's one verb on host slices (`spec`: a
    /// [`ScanKind`] for a forward scan, or a [`ScanSpec`] with a
    /// direction, optionally segments, see [`ScanSpec::segments`], and a
    /// `&mut` carry-out slot where one is wanted, see
    /// [`ScanSpec::carry_out`]). On the CPU this is the oracle of every
    /// GPU combination.
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// let mut scanner = Scanner::<Sum>::new();
    /// let suffix_sums = scanner.scan(ScanSpec::inclusive().reverse(), &[1, 2, 3, 4]).unwrap();
    /// assert_eq!(suffix_sums, [10, 9, 7, 4]);
    /// let mut total = 0;
    /// let offsets = scanner.scan(ScanSpec::exclusive().carry_out(&mut total), &[3, 1, 2]).unwrap();
    /// assert_eq!((offsets, total), (vec![0, 3, 4], 6));
    /// ```
    ///
    /// Segmented, the scan restarts at every head, given as flags, rows of
    /// a fixed length, offsets or keys (see [`scan_core::segmented`]):
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::segmented::{HeadFlags, Segments};
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// let mut scanner = Scanner::<Sum>::new();
    /// let heads = HeadFlags::Bytes(&[1, 0, 1, 0, 0]);
    /// let out = scanner.scan(ScanSpec::exclusive().segments(heads), &[1, 2, 3, 4, 5]).unwrap();
    /// assert_eq!(out, [0, 1, 0, 3, 7]);
    /// // In reverse, each segment from its last element.
    /// let out = scanner.scan(ScanSpec::exclusive().reverse().segments(heads), &[1, 2, 3, 4, 5]).unwrap();
    /// assert_eq!(out, [2, 0, 9, 5, 0]);
    /// // Rows of a fixed length need no flags: a 2 × 3 matrix along its rows.
    /// let out = scanner.scan(ScanSpec::inclusive().segments(Segments::rows(3)), &[1, 2, 3, 4, 5, 6]).unwrap();
    /// assert_eq!(out, [1, 3, 6, 4, 9, 15]);
    /// ```
    pub fn scan<'a>(
        &mut self,
        spec: impl IntoScanSpec<
            Op::Element,
            Carry: HostSegmentedCarryOut<Op::Element>,
            Segments: HostSegments<'a>,
        >,
        input: &[Op::Element],
    ) -> Result<Vec<Op::Element>> {
        self.first_call_law_check(input)?;
        let (spec, shape) = spec.into_spec().split_segments();
        match (&mut self.inner, shape.into_shape()) {
            (Inner::Gpu { scanner, stream }, Shape::Segmented(segments)) => {
                scanner.scan_host(stream, spec.segments(segments), input)
            }
            (Inner::Gpu { scanner, stream }, Shape::Columns { row_length }) => {
                scanner.scan_host(stream, matrix(spec)?.columns(row_length), input)
            }
            (Inner::Gpu { scanner, stream }, Shape::SummedArea { row_length }) => {
                scanner.scan_host(stream, matrix(spec)?.summed_area(row_length), input)
            }
            (Inner::Gpu { scanner, stream }, _) => scanner.scan_host(stream, spec, input),
            (Inner::Cpu { .. }, Shape::Segmented(segments)) => {
                let mut out = input.to_vec();
                segmented::par_scan_in_place::<Op>(spec, segments, &mut out)?;
                Ok(out)
            }
            (Inner::Cpu { .. }, Shape::Columns { row_length }) => {
                let mut out = input.to_vec();
                scan_core::columns::par_scan_in_place::<Op>(matrix(spec)?, row_length, &mut out)?;
                Ok(out)
            }
            (Inner::Cpu { .. }, Shape::SummedArea { row_length }) => {
                let mut out = input.to_vec();
                let spec = matrix(spec)?;
                scan_core::summed_area::par_scan_in_place::<Op>(spec, row_length, &mut out)?;
                Ok(out)
            }
            (Inner::Cpu { .. }, _) => {
                let (spec, mut carry_out) = spec.split_carry_out();
                carry_out.check_unsegmented()?;
                let mut out = input.to_vec();
                let mut carry = Op::IDENTITY;
                cpu::par_scan_in_place::<Op>(spec.carry_out(&mut carry), &mut out);
                carry_out.put_unsegmented(carry);
                Ok(out)
            }
        }
    }

    /// Inclusive scan.
    pub fn inclusive(&mut self, input: &[Op::Element]) -> Result<Vec<Op::Element>> {
        self.scan(ScanKind::Inclusive, input)
    }

    /// Exclusive scan (starting from the identity).
    pub fn exclusive(&mut self, input: &[Op::Element]) -> Result<Vec<Op::Element>> {
        self.scan(ScanKind::Exclusive, input)
    }

    /// Exclusive scan starting from `init`.
    pub fn exclusive_with_init(
        &mut self,
        input: &[Op::Element],
        init: Op::Element,
    ) -> Result<Vec<Op::Element>> {
        self.scan(ScanKind::ExclusiveWithInit(init), input)
    }
}

/// The spec of a scan of a matrix, which writes no carry-out (the spec's
/// builder allows none; this guards specs put together otherwise).
fn matrix<E, C: HostSegmentedCarryOut<E>>(spec: ScanSpec<E, C>) -> Result<ScanSpec<E>> {
    let (spec, _) = spec.split_carry_out();
    match C::WANTED {
        false => Ok(spec),
        true => Err(ScanError::MatrixCarryOut),
    }
}

impl<Op: ScanOp> Default for Scanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    fn default() -> Self {
        Self::new()
    }
}
