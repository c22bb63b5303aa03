//! Scans through load and store stages ([`ScanStages`]): the input read as
//! another type and mapped to the operator's element as each element is
//! loaded, each result mapped as it is stored, in the same kernels and
//! passes as a plain scan, so the input is read once and the output
//! written once.

use crate::carry::DeviceCarryOut;
use crate::entry::{Bound, Operands};
use crate::error::Result;
use crate::execute::TileScan;
use crate::gpu::GpuScanner;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use kernels_gen::abi::{Family, StageRef, Stages};
use scan_core::stages::ScanMap;
use scan_core::{IntoScanSpec, NoSegments, ScanOp, ScanSpec};
use std::marker::PhantomData;
use std::sync::Arc;

/// The stages of a scan for [`GpuScanner::scan_through`]: a load stage
/// (`#[scan_map]` from the input's type `In` to the operator's element
/// `T`), a store stage (from `T` to the output's type `Out`), or both.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::ScanStages;
///
/// #[scan_map(input = u8, output = u32, map = |x| x as u32)]
/// struct Widen;
///
/// #[scan_map(input = u32, output = u16, map = |x| (x >> 16) as u16)]
/// struct HighHalf;
///
/// // u8 in, u32 scanned, u16 out.
/// let stages: ScanStages<u8, u32, u16> = ScanStages::both::<Widen, HighHalf>();
/// ```
pub struct ScanStages<In, T, Out> {
    stages: Stages,
    /// The load stage's Rust function (the identity without one), for the
    /// first-call law check on a host sample of the input.
    load: fn(In) -> T,
    _types: PhantomData<fn(In, T) -> Out>,
}

impl<In, T, Out> Clone for ScanStages<In, T, Out> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<In, T, Out> Copy for ScanStages<In, T, Out> {}

impl<In, T, Out> std::fmt::Debug for ScanStages<In, T, Out> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |s: Option<StageRef>| s.map(|s| s.name);
        f.debug_struct("ScanStages")
            .field("load", &name(self.stages.load))
            .field("store", &name(self.stages.store))
            .finish()
    }
}

/// Stage `M` as the kernels know it (by its type: two stages of one name
/// in two functions of one module are two stages).
fn stage<M: ScanMap>() -> StageRef {
    StageRef {
        id: std::any::TypeId::of::<M>(),
        name: M::NAME,
        source: M::CUDA_SOURCE,
        input_size: std::mem::size_of::<M::Input>(),
        output_size: std::mem::size_of::<M::Output>(),
    }
}

fn same<T>(x: T) -> T {
    x
}

impl<In, T> ScanStages<In, T, T> {
    /// Load stage `L` alone: the input holds `L::Input`, the output the
    /// operator's elements.
    pub fn load<L: ScanMap<Input = In, Output = T>>() -> Self {
        ScanStages {
            stages: Stages {
                load: Some(stage::<L>()),
                store: None,
            },
            load: L::apply,
            _types: PhantomData,
        }
    }
}

impl<T, Out> ScanStages<T, T, Out> {
    /// Store stage `S` alone: the input holds the operator's elements, the
    /// output `S::Output`.
    pub fn store<S: ScanMap<Input = T, Output = Out>>() -> Self {
        ScanStages {
            stages: Stages {
                load: None,
                store: Some(stage::<S>()),
            },
            load: same,
            _types: PhantomData,
        }
    }
}

impl<In, T, Out> ScanStages<In, T, Out> {
    /// Load stage `L` and store stage `S`.
    pub fn both<L, S>() -> Self
    where
        L: ScanMap<Input = In, Output = T>,
        S: ScanMap<Input = T, Output = Out>,
    {
        ScanStages {
            stages: Stages {
                load: Some(stage::<L>()),
                store: Some(stage::<S>()),
            },
            load: L::apply,
            _types: PhantomData,
        }
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// A scan through `stages`: `output[i]` is the store stage of the scan
    /// of the load stage of each input element, `spec` any kind, direction
    /// and carry-out of a scan without segments (the carry-out is the
    /// operator's element, before any store stage). The stages are applied
    /// inside the scan's kernels as each element is loaded and stored, so
    /// the input is read once and the output written once, as by a plain
    /// scan (on the single pass with look-back, or reduce-then-scan where
    /// the tuning asks for it; not on the pipelined pass, whose bulk copies
    /// move the operator's elements). The CPU backend's
    /// [`scan_core::cpu::scan_staged`] runs the same stages. Staged scans
    /// have no segments and are not in place (the input and output differ
    /// in type).
    ///
    /// ```no_run
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::scan_runtime::{open_device, ScanStages};
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// // Bytes summed as u32, so that the sums do not wrap at 255.
    /// #[scan_map(input = u8, output = u32, map = |x| x as u32)]
    /// struct Widen;
    ///
    /// let ctx = open_device(0)?;
    /// let stream = ctx.new_stream()?;
    /// let bytes = stream.clone_htod(&[200u8, 100, 50])?;
    /// let mut sums = stream.alloc_zeros::<u32>(3)?;
    /// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
    /// scanner.scan_through(&stream, ScanKind::Inclusive, ScanStages::load::<Widen>(), &bytes, &mut sums)?;
    /// assert_eq!(stream.clone_dtoh(&sums)?, [200, 300, 350]);
    /// # Ok::<(), ScanError>(())
    /// ```
    ///
    /// # Errors
    /// As [`GpuScanner::scan`]: [`ScanError::LengthMismatch`](crate::ScanError::LengthMismatch)
    /// when the output's length is not the input's, a carry-out slot of
    /// the wrong length, [`ScanError::TooLong`](crate::ScanError::TooLong);
    /// in debug builds [`ScanError::OperatorLaws`](crate::ScanError::OperatorLaws)
    /// when the first call's input, loaded through the stage on the host,
    /// breaks the operator's laws; a compile or driver error. Nothing is
    /// enqueued then, and the output is untouched.
    pub fn scan_through<In, Out, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry: DeviceCarryOut<Op::Element>, Segments = NoSegments>,
        stages: ScanStages<In, Op::Element, Out>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        In: Copy + DeviceRepr + ValidAsZeroBits,
        I: DevicePtr<In>,
        O: DevicePtrMut<Out>,
    {
        let operands = Operands::apart(input, output);
        let n = operands.len()?;
        let (spec, NoSegments) = spec.into_spec().split_segments();
        let (spec, mut carry_out) = spec.split_carry_out();
        carry_out.check()?;
        let load = stages.load;
        self.enter_typed(
            stream,
            operands,
            n,
            &mut carry_out,
            1, // typed buffers: aligned by their types
            |s, stream, ptr, n| s.first_call_law_check_mapped(stream, ptr, n, load),
            |s| s.prepare(n, stream),
            |s, (), b| {
                s.launch_staged(stream, spec, stages.stages, &b)?;
                s.store_unsegmented_count(stream, b.count)
            },
        )
    }

    /// [`GpuScanner::scan_through`] a load stage `L` alone
    /// (`scanner.scan_mapped::<Widen>(&stream, ScanKind::Inclusive, &bytes, &mut sums)`).
    pub fn scan_mapped<L>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry: DeviceCarryOut<Op::Element>, Segments = NoSegments>,
        input: &impl DevicePtr<L::Input>,
        output: &mut impl DevicePtrMut<Op::Element>,
    ) -> Result<()>
    where
        L: ScanMap<Output = Op::Element>,
        L::Input: DeviceRepr + ValidAsZeroBits,
    {
        self.scan_through(stream, spec, ScanStages::load::<L>(), input, output)
    }

    /// Makes sure scans through `stages` like `spec` of up to `n` elements
    /// on `stream` need no allocation and compile nothing (before capturing
    /// them into a CUDA graph, or timing them), as [`GpuScanner::reserve`]
    /// does for plain scans.
    pub fn reserve_through<In, Out>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry: DeviceCarryOut<Op::Element>, Segments = NoSegments>,
        stages: ScanStages<In, Op::Element, Out>,
        n: usize,
    ) -> Result<()> {
        let (spec, NoSegments) = spec.into_spec().split_segments();
        let (spec, carry_out) = spec.split_carry_out();
        self.prepare(n, stream)?;
        let family = Family::Staged(stages.stages);
        self.load_passes(family, spec.kind.is_inclusive(), spec.direction)?;
        self.reserve_carry_out(&carry_out, n, stream)
    }

    /// Enqueues the scan `spec` of `b.n` elements through `stages`.
    fn launch_staged(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        stages: Stages,
        b: &Bound,
    ) -> Result<()> {
        let scan = TileScan::new(
            spec.kind,
            spec.direction,
            self.identity,
            b.src,
            b.dst,
            b.n,
            b.carry,
            None,
        );
        self.execute(stream, &scan.staged(stages))
    }
}
