//! The operator's laws checked on the data a scan is given: on the first
//! call in debug builds, on request in any build (see
//! [`scan_core::laws::check_laws`]).

use crate::error::{Result, ScanError};
use crate::gpu::{GpuScanner, LawCheck};
use cudarc::driver::sys::CUstreamCaptureStatus;
use cudarc::driver::{CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};
use scan_core::laws::{check_laws, sample_ranges};
use scan_core::ScanOp;
use std::sync::Arc;

/// Elements sampled from an input for the check: six runs of 16, about
/// 300 calls of `combine`.
pub(crate) const LAW_SAMPLE: usize = 96;

/// [`check_laws`] on a sample of `data`, as a [`ScanError`].
pub(crate) fn check_host<Op: ScanOp>(data: &[Op::Element]) -> Result<()> {
    let sample = scan_core::laws::sample(data, LAW_SAMPLE);
    check_laws::<Op>(&sample).map_err(|counterexample| ScanError::OperatorLaws {
        op: Op::NAME,
        counterexample: Box::new(counterexample),
    })
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// Checks that the operator is associative and `IDENTITY` an identity
    /// on a sample of `input` (96 elements in runs of 16 from its start to
    /// its end), with the operator's Rust `combine`:
    /// [`scan_core::laws::check_laws`] says how elements are compared. The
    /// sample is copied to the host, so this waits for `stream`.
    ///
    /// Debug builds run it on the first scan of each scanner (see
    /// [`GpuScanner::set_law_checks`]); this is the call for release builds
    /// and for data that differs from the first call's.
    ///
    /// # Errors
    /// [`ScanError::OperatorLaws`] with the values that break a law, or a
    /// driver error from the copy.
    pub fn check_laws<I: DevicePtr<Op::Element>>(
        &self,
        stream: &Arc<CudaStream>,
        input: &I,
    ) -> Result<()> {
        let (ptr, _sync) = input.device_ptr(stream);
        check_device::<Op>(stream, ptr, input.len())
    }

    /// Debug builds check the operator's laws on the first scan's input
    /// (as [`GpuScanner::check_laws`] does, waiting for the stream once)
    /// and fail that scan with [`ScanError::OperatorLaws`], output
    /// untouched, when one is broken. A scan enqueued while its stream is
    /// being captured into a CUDA graph is not checked (it cannot wait);
    /// the next one outside a capture is. `false` turns the check off, for
    /// an operator whose laws hold only up to a rounding this check does
    /// not allow, or where the one wait matters; release builds never run
    /// it by themselves.
    pub fn set_law_checks(&mut self, on: bool) {
        self.law_check = LawCheck::requested(on);
    }

    /// The first-call check of [`GpuScanner::set_law_checks`] on the `n`
    /// elements at device address `ptr`.
    pub(crate) fn first_call_law_check(
        &mut self,
        stream: &Arc<CudaStream>,
        ptr: u64,
        n: usize,
    ) -> Result<()> {
        self.first_call_law_check_mapped(stream, ptr, n, |x| x)
    }

    /// [`GpuScanner::first_call_law_check`] of a scan whose input holds
    /// elements of type `In` that `load` maps to the operator's (its load
    /// stage's Rust function): the sample is mapped on the host as the
    /// kernels map it.
    pub(crate) fn first_call_law_check_mapped<In: Copy + DeviceRepr + ValidAsZeroBits>(
        &mut self,
        stream: &Arc<CudaStream>,
        ptr: u64,
        n: usize,
        load: fn(In) -> Op::Element,
    ) -> Result<()> {
        if self.law_check == LawCheck::Done || n == 0 {
            return Ok(());
        }
        if stream.capture_status()? != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Ok(());
        }
        let sample = copy_sample::<In>(stream, ptr, n)?;
        check_host::<Op>(&sample.into_iter().map(load).collect::<Vec<_>>())?;
        self.law_check = LawCheck::Done;
        Ok(())
    }
}

/// Copies the sample of the `n` elements at `ptr` to the host (waiting for
/// `stream`) and checks it.
fn check_device<Op: ScanOp>(stream: &Arc<CudaStream>, ptr: u64, n: usize) -> Result<()>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    check_host::<Op>(&copy_sample::<Op::Element>(stream, ptr, n)?)
}

/// The sample of the `n` elements of type `E` at `ptr`, copied to the host
/// (waiting for `stream`).
fn copy_sample<E: Copy + DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    ptr: u64,
    n: usize,
) -> Result<Vec<E>> {
    stream.context().bind_to_thread()?;
    let ranges = sample_ranges(n, LAW_SAMPLE);
    let total = ranges.iter().map(|r| r.len()).sum::<usize>();
    // SAFETY: all-zero bits are a valid element (ValidAsZeroBits).
    let mut sample: Vec<E> = vec![unsafe { std::mem::zeroed() }; total];
    let size = std::mem::size_of::<E>() as u64;
    let mut filled = 0;
    for range in ranges {
        let dst = &mut sample[filled..filled + range.len()];
        filled += range.len();
        // SAFETY: `ptr` holds `n` elements of this type (the caller's buffer) and every
        // sampled range lies inside 0..n; `dst` is not read until the stream has been
        // synchronised below.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                dst,
                ptr + range.start as u64 * size,
                stream.cu_stream(),
            )?;
        }
    }
    stream.synchronize()?;
    Ok(sample)
}
