//! The one prologue of every entry point that scans device buffers (plain,
//! segmented, columns, 2-D; out of place and in place): lengths checked and
//! the scan prepared before anything is enqueued, so that an error leaves
//! the output untouched; the buffers' addresses taken where a capture
//! allows ([`crate::capture`]); the first-call law check; the carry-out's
//! slots; then the launch, and the background compiles it asked for.

use crate::carry::DeviceCarryOut;
use crate::error::{Result, ScanError};
use crate::gpu::GpuScanner;
use cudarc::driver::{
    CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, SyncOnDrop, ValidAsZeroBits,
};
use scan_core::ScanOp;
use std::sync::Arc;

/// What a scan reads and writes: two buffers (of elements `I` and `O`,
/// which differ only through stages), or one scanned in place.
pub(crate) enum Operands<'b, I, O = I> {
    /// Read from the first, written to the second (of the same length).
    Apart(&'b dyn DevicePtr<I>, &'b mut dyn DevicePtrMut<O>),
    /// Read and written in place (made only where `I` is `O`).
    InPlace(&'b mut dyn DevicePtrMut<I>),
}

impl<'b, E> Operands<'b, E> {
    /// In place.
    pub(crate) fn in_place(data: &'b mut impl DevicePtrMut<E>) -> Self {
        Operands::InPlace(data)
    }
}

impl<'b, I, O> Operands<'b, I, O> {
    /// Out of place.
    pub(crate) fn apart(
        input: &'b impl DevicePtr<I>,
        output: &'b mut impl DevicePtrMut<O>,
    ) -> Self {
        Operands::Apart(input, output)
    }

    /// The number of elements, once the output is known to hold as many
    /// as the input.
    pub(crate) fn len(&self) -> Result<usize> {
        match self {
            Operands::Apart(input, output) if input.len() != output.len() => {
                Err(ScanError::LengthMismatch {
                    input: input.len(),
                    output: output.len(),
                })
            }
            Operands::Apart(input, _) => Ok(input.len()),
            Operands::InPlace(data) => Ok(data.len()),
        }
    }
}

/// The device addresses a launch takes, and the stream they were taken on.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    /// Where the input lies.
    pub(crate) src: u64,
    /// Where the output goes (`src` in place).
    pub(crate) dst: u64,
    /// Elements.
    pub(crate) n: usize,
    /// The carry-out's or the totals' slot (0: none).
    pub(crate) carry: u64,
    /// The segment count's slot (0: none).
    pub(crate) count: u64,
    /// Where the scan takes the addresses of the other buffers it is given
    /// ([`GpuScanner::address_stream`], asked once per scan).
    pub(crate) at: Arc<CudaStream>,
}

impl Bound {
    /// The same buffers, without the carry-out's slots.
    pub(crate) fn without_carry(&self) -> Bound {
        Bound {
            carry: 0,
            count: 0,
            ..self.clone()
        }
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// Runs a scan of `operands` (whose lengths the caller checked with
    /// [`Operands::len`], `n`): `prepare` (which may refuse, reserve or
    /// compile, and enqueues nothing the output would show), then the
    /// addresses, the law check and the carry-out's slots, then `launch`.
    pub(crate) fn enter<P>(
        &mut self,
        stream: &Arc<CudaStream>,
        operands: Operands<'_, Op::Element>,
        n: usize,
        carry_out: &mut impl DeviceCarryOut<Op::Element>,
        prepare: impl FnOnce(&mut Self) -> Result<P>,
        launch: impl FnOnce(&mut Self, P, Bound) -> Result<()>,
    ) -> Result<()> {
        let law_check = Self::first_call_law_check;
        let align = self.op.element_align;
        self.enter_typed(
            stream, operands, n, carry_out, align, law_check, prepare, launch,
        )
    }

    /// [`GpuScanner::enter`] over buffers of other types than the
    /// operator's (a staged scan's), whose first-call law check is
    /// `law_check` (given the input's address and length), and whose
    /// input, output and carry-out slot must be aligned to `align` bytes
    /// (checked: a built operator's buffers are bytes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn enter_typed<P, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        operands: Operands<'_, I, O>,
        n: usize,
        carry_out: &mut impl DeviceCarryOut<Op::Element>,
        align: usize,
        law_check: impl FnOnce(&mut Self, &Arc<CudaStream>, u64, usize) -> Result<()>,
        prepare: impl FnOnce(&mut Self) -> Result<P>,
        launch: impl FnOnce(&mut Self, P, Bound) -> Result<()>,
    ) -> Result<()> {
        let prepared = prepare(self)?;
        let at = self.address_stream(stream)?;
        let (src, dst, _guards): (u64, u64, [Option<SyncOnDrop<'_>>; 2]) = match operands {
            Operands::Apart(input, output) => {
                let (src, src_guard) = input.device_ptr(&at);
                let (dst, dst_guard) = output.device_ptr_mut(&at);
                (src, dst, [Some(src_guard), Some(dst_guard)])
            }
            Operands::InPlace(data) => {
                let (ptr, guard) = data.device_ptr_mut(&at);
                (ptr, ptr, [Some(guard), None])
            }
        };
        let slots = carry_out.slots(&at);
        let addresses = [
            ("the input", src),
            ("the output", dst),
            ("the carry-out slot", slots.carry),
        ];
        if align > 1 {
            for (what, address) in addresses {
                if address % align as u64 != 0 {
                    return Err(ScanError::ElementBuffer {
                        what,
                        bytes: 0,
                        address,
                        size: self.op.element_size(),
                        align,
                    });
                }
            }
        }
        law_check(self, stream, src, n)?;
        let bound = Bound {
            src,
            dst,
            n,
            carry: slots.carry,
            count: slots.count,
            at: at.clone(),
        };
        let launched = launch(self, prepared, bound);
        self.then_start_background_compiles(launched)
    }
}
