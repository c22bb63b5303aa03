//! Which path a scan over device buffers takes, plain or segmented, as a
//! pure function of what is known before anything is launched: the
//! request (length, element and tile sizes, direction, segment source,
//! alignment), the [`Tuning`], and how far the pipelined and the full-tile
//! kernels are (loaded, compiling in the background, or unable to run
//! here). The launchers follow the [`Path`] it returns; its table over
//! every kind of request is a snapshot test, so a change of path shows
//! without a GPU.

use crate::path::{pipelined_wanted_for, resolve_path, ScanPath};
use crate::policy::PLANNER_POLICY;
use crate::tuning::Tuning;
use kernels_gen::abi::Pass;
use scan_core::Direction;

/// What a scan asks for, as far as its path depends on it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    /// Elements.
    pub(crate) n: usize,
    /// Bytes per element.
    pub(crate) element_size: usize,
    /// Elements per (full) tile of the look-back and reduce-then-scan passes.
    pub(crate) tile_items: usize,
    /// Elements per small tile (the single pass over short inputs).
    pub(crate) small_tile_items: usize,
    /// Elements per tile of the pipelined pass (0: none for this element).
    pub(crate) pipelined_tile_items: usize,
    pub(crate) direction: Direction,
    /// `None` for a plain scan.
    pub(crate) segments: Option<Segments>,
    /// Whether every buffer the pipelined pass copies in bulk is 16-byte
    /// aligned.
    pub(crate) aligned: bool,
    /// The deterministic plain scan's tiles
    /// (`kernels_gen::Layout::deterministic_tile_items`), and whether its
    /// one pass can take these elements.
    pub(crate) deterministic: DeterministicShape,
}

/// The shape of a deterministic plain scan (`deterministic.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeterministicShape {
    /// Elements per tile (the pipelined tile).
    pub(crate) tile_items: usize,
    /// Whether the one pass (the pipelined pass with a deterministic
    /// lookahead) can take the elements.
    pub(crate) one_pass: bool,
}

/// The elements a deterministic scan's three passes keep for `tiles`
/// tiles: the tiles' totals, then their prefixes and the carry-out.
pub(crate) const fn deterministic_totals(tiles: usize) -> usize {
    2 * tiles + 1
}

/// Whether `tuning`'s path lets a deterministic plain scan take its one
/// pass (`Auto` or `Pipelined`; the other paths ask for the three passes).
pub(crate) fn deterministic_one_pass_wanted(tuning: &Tuning) -> bool {
    matches!(tuning.path, ScanPath::Auto | ScanPath::Pipelined)
}

/// The segment source, as far as the path depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Segments {
    /// Head flags or offsets: the pipelined pass where it is wanted.
    FlagsOrOffsets,
    /// Keys: the look-back pass on [`ScanPath::Auto`] (finding a tile's
    /// heads is latency its many resident blocks hide; BENCHMARKS.md).
    Keys,
    /// Rows of this many elements: short power-of-two rows of small
    /// elements take the look-back pass on [`ScanPath::Auto`]
    /// ([`look_back_rows`]).
    Rows(usize),
}

/// How far a kernel is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Loaded (or loads now, when the scan waits for it).
    Ready,
    /// Compiling in the background: take a kernel that is ready.
    Compiling,
    /// It cannot run on this device (no bulk copies, too little shared
    /// memory).
    CannotRun,
}

/// The path a scan takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// No element: at most the carry-out (the seed) is written.
    Empty,
    /// One tile: one launch, seeded directly.
    OneTile,
    /// The pipelined single pass over `tiles` pipelined tiles.
    Pipelined { tiles: usize },
    /// The single pass with decoupled look-back over `tiles` tiles, small
    /// ones or full ones.
    SinglePass { tiles: usize, small: bool },
    /// Reduce the `tiles` tiles, scan their totals, rescan them.
    ReduceThenScan { tiles: usize },
    /// A deterministic plain scan over `tiles` deterministic tiles: in one
    /// pass (`one_pass`), or in three, the same chain either way.
    Deterministic { tiles: usize, one_pass: bool },
    /// A reduction ([`reduce`]): the deterministic chain's first two
    /// passes over `tiles` tiles, the second writing the carry-out (the
    /// fold of every element); no output.
    Reduce { tiles: usize },
}

/// One launch of a path: a [`Pass`] over `tiles` tiles (the pass over
/// tile totals walks `tiles` totals in one block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) pass: Pass,
    pub(crate) tiles: usize,
}

/// The scratch a path needs in the workspace of the scan's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scratch {
    /// None.
    None,
    /// Single-pass status and values for `tiles` tiles, and a launch state.
    SinglePass { tiles: usize },
    /// One element per tile, and with `flags` one byte per tile.
    TileTotals { tiles: usize, flags: bool },
    /// What a deterministic tuning may need (what `reserve` reserves for
    /// it): single-pass entries for `single_pass` tiles (its one pass) and
    /// `totals` elements with a flag byte each (its three passes, and
    /// segmented reduce-then-scan).
    Deterministic { single_pass: usize, totals: usize },
}

impl Path {
    /// The launches of the path, in order.
    pub(crate) fn steps(self) -> impl Iterator<Item = Step> {
        let step = |pass, tiles| Some(Step { pass, tiles });
        let steps = match self {
            Path::Empty => [None, None, None],
            Path::OneTile => [step(Pass::ScanTiles, 1), None, None],
            Path::Pipelined { tiles } => [step(Pass::Pipelined, tiles), None, None],
            Path::SinglePass { tiles, small } => {
                let pass = if small {
                    Pass::SinglePassSmall
                } else {
                    Pass::SinglePass
                };
                [step(pass, tiles), None, None]
            }
            Path::ReduceThenScan { tiles } => [
                step(Pass::ReduceTiles, tiles),
                step(Pass::ScanTileTotals, tiles),
                step(Pass::ScanTiles, tiles),
            ],
            Path::Deterministic {
                tiles,
                one_pass: true,
                ..
            } => [step(Pass::DeterministicPipelined, tiles), None, None],
            Path::Deterministic { tiles, .. } => [
                step(Pass::DeterministicReduce, tiles),
                step(Pass::DeterministicPrefixes, tiles),
                step(Pass::DeterministicScan, tiles),
            ],
            Path::Reduce { tiles } => [
                step(Pass::DeterministicReduce, tiles),
                step(Pass::DeterministicPrefixes, tiles),
                None,
            ],
        };
        steps.into_iter().flatten()
    }

    /// The scratch the path's launches use (segmented reduce-then-scan
    /// keeps a head flag per tile beside each total).
    pub(crate) fn scratch(self, segmented: bool) -> Scratch {
        match self {
            Path::Empty | Path::OneTile => Scratch::None,
            Path::Pipelined { tiles } | Path::SinglePass { tiles, .. } => {
                Scratch::SinglePass { tiles }
            }
            Path::ReduceThenScan { tiles } => Scratch::TileTotals {
                tiles,
                flags: segmented,
            },
            Path::Deterministic {
                tiles,
                one_pass: true,
                ..
            } => Scratch::SinglePass { tiles },
            Path::Deterministic { tiles, .. } | Path::Reduce { tiles } => Scratch::TileTotals {
                tiles: deterministic_totals(tiles),
                flags: false,
            },
        }
    }
}

/// The path of a reduction of `n` elements (`GpuScanner::reduce`) over
/// deterministic tiles of `tile_items` elements: the same tiles and chain
/// as a deterministic scan, so its bits depend on the input alone, and
/// the total a deterministic scan's carry-out would be.
pub(crate) fn reduce(n: usize, tile_items: usize) -> Path {
    match n {
        0 => Path::Empty,
        _ => Path::Reduce {
            tiles: n.div_ceil(tile_items),
        },
    }
}

/// How far the kernels a choice depends on are, asked only when the choice
/// depends on them (asking may load a kernel or start its background
/// compile).
pub(crate) trait Probe {
    /// What asking can fail with.
    type Error;
    /// The pipelined pass's kernel.
    fn pipelined(&mut self) -> Result<Readiness, Self::Error>;
    /// The look-back pass's kernel over full tiles (plain scans).
    fn full_tiles(&mut self) -> Result<Readiness, Self::Error>;
}

/// The path of `request` under `tuning`, `probe` saying how far the
/// kernels are.
pub(crate) fn choose<P: Probe>(
    request: &Request,
    tuning: &Tuning,
    probe: &mut P,
) -> Result<Path, P::Error> {
    let Request { n, .. } = *request;
    if n == 0 {
        return Ok(Path::Empty);
    }
    if tuning.deterministic && request.segments.is_none() && request.deterministic.tile_items > 0 {
        return deterministic(request, tuning, probe);
    }
    let path = tuning.resolved_path();
    let tiles = n.div_ceil(request.tile_items);
    if tiles == 1 {
        return Ok(Path::OneTile);
    }
    let plain = request.segments.is_none();
    let look_back_faster = match request.segments {
        Some(Segments::Keys) => true,
        Some(Segments::Rows(row_length)) => look_back_rows(row_length, request.element_size),
        Some(Segments::FlagsOrOffsets) | None => false,
    };
    let pipelined_considered = request.pipelined_tile_items > 0
        && request.aligned
        && pipelined_wanted_for(request.element_size, path, n, !plain)
        && if plain {
            // Short plain inputs take small tiles (below).
            n > tuning.small_tile_limit
        } else {
            // The segmented pipelined pass runs forward only.
            request.direction == Direction::Forward && !(path == ScanPath::Auto && look_back_faster)
        };
    // Plain scans wait on small tiles while the pipelined kernel compiles.
    let mut interim = false;
    if pipelined_considered {
        match probe.pipelined()? {
            Readiness::Ready => {
                return Ok(Path::Pipelined {
                    tiles: n.div_ceil(request.pipelined_tile_items),
                })
            }
            Readiness::Compiling => interim = plain,
            Readiness::CannotRun => {}
        }
    }
    if path == ScanPath::ReduceThenScan {
        return Ok(Path::ReduceThenScan { tiles });
    }
    if !plain {
        return Ok(Path::SinglePass {
            tiles,
            small: false,
        });
    }
    let small = Path::SinglePass {
        tiles: n.div_ceil(request.small_tile_items),
        small: true,
    };
    Ok(
        if n <= tuning.small_tile_limit || interim || probe.full_tiles()? != Readiness::Ready {
            // Short inputs, or the full-tile kernel is compiling: small
            // tiles, whose kernel compiles in about half the time.
            small
        } else {
            Path::SinglePass {
                tiles,
                small: false,
            }
        },
    )
}

/// The path of a deterministic plain scan: its one pass where it can run
/// (its elements, aligned buffers, its kernel ready) and the tuning's path
/// allows it (`Auto` or `Pipelined`), else its three passes, which give the
/// same bits (so a compiling kernel never makes a scan wait). Every length
/// takes them, one tile too: the chain is the same at every length.
fn deterministic<P: Probe>(
    request: &Request,
    tuning: &Tuning,
    probe: &mut P,
) -> Result<Path, P::Error> {
    let shape = request.deterministic;
    let tiles = request.n.div_ceil(shape.tile_items);
    let one_pass = deterministic_one_pass_wanted(tuning)
        && shape.one_pass
        && request.aligned
        && probe.pipelined()? == Readiness::Ready;
    Ok(Path::Deterministic { tiles, one_pass })
}

/// The scratch that covers every path a scan of up to `request.n`
/// elements, plain or segmented, takes under `tuning` (what
/// `GpuScanner::reserve` reserves): single-pass entries for the most tiles
/// of the tilings the path may use (small tiles for short plain inputs,
/// the pipelined tiles where that pass may run), or reduce-then-scan's
/// totals with a flag byte per tile. None for one tile.
pub(crate) fn reserved_scratch(request: &Request, tuning: &Tuning) -> Scratch {
    let n = request.n;
    let tiles = n.div_ceil(request.tile_items);
    if tuning.deterministic && n > 0 {
        // The plain scans' one pass or three, and segmented reduce-then-scan.
        let shape = request.deterministic;
        let deterministic_tiles = n.div_ceil(shape.tile_items);
        return Scratch::Deterministic {
            single_pass: deterministic_tiles,
            totals: deterministic_totals(deterministic_tiles).max(tiles),
        };
    }
    if tiles <= 1 {
        return Scratch::None;
    }
    let path = tuning.resolved_path();
    if path == ScanPath::ReduceThenScan {
        return Scratch::TileTotals { tiles, flags: true };
    }
    let mut most = tiles;
    if request.pipelined_tile_items > 0 && resolve_path(path) == ScanPath::Pipelined {
        most = most.max(n.div_ceil(request.pipelined_tile_items));
    }
    if n <= tuning.small_tile_limit {
        most = most.max(n.div_ceil(request.small_tile_items));
    }
    Scratch::SinglePass { tiles: most }
}

/// Whether rows of `row_length` elements of `element_size` bytes are faster
/// on the look-back single pass ([`PLANNER_POLICY`]).
pub(crate) fn look_back_rows(row_length: usize, element_size: usize) -> bool {
    let policy = &PLANNER_POLICY;
    element_size <= policy.look_back_rows_max_size
        && row_length.is_power_of_two()
        && row_length <= policy.look_back_rows_max
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// Fixed answers; `None` panics if asked.
    struct Fixed(Option<Readiness>, Option<Readiness>);

    impl Probe for Fixed {
        type Error = std::convert::Infallible;
        fn pipelined(&mut self) -> Result<Readiness, Self::Error> {
            Ok(self.0.expect("the pipelined kernel was asked about"))
        }
        fn full_tiles(&mut self) -> Result<Readiness, Self::Error> {
            Ok(self.1.expect("the full-tile kernel was asked about"))
        }
    }

    /// The deterministic shape of the elements of [`ELEMENTS`].
    fn shape_of(size: usize) -> DeterministicShape {
        let (.., pipelined_tile) = ELEMENTS
            .into_iter()
            .find(|e| e.0 == size)
            .expect("an element of the table");
        DeterministicShape {
            tile_items: pipelined_tile,
            one_pass: size <= kernels_gen::PIPELINED_WALK_MAX_ELEMENT_SIZE,
        }
    }

    /// A forward plain request of `n` elements of the [`ELEMENTS`] row of
    /// `size` bytes, on aligned buffers.
    fn request(size: usize, n: usize) -> Request {
        let (_, tile, small, pipelined_tile) = ELEMENTS
            .into_iter()
            .find(|e| e.0 == size)
            .expect("an element of the table");
        Request {
            n,
            element_size: size,
            tile_items: tile,
            small_tile_items: small,
            pipelined_tile_items: pipelined_tile,
            direction: Direction::Forward,
            segments: None,
            aligned: true,
            deterministic: shape_of(size),
        }
    }

    fn pick(request: &Request, tuning: &Tuning, pipelined: Readiness, full: Readiness) -> Path {
        let Ok(path) = choose(request, tuning, &mut Fixed(Some(pipelined), Some(full)));
        path
    }

    #[test]
    fn auto_sends_short_power_of_two_rows_of_small_elements_to_the_look_back_pass() {
        // Measured faster on the look-back pass: u32 rows of 16, 1024, 4096.
        for row in [1, 2, 16, 1024, 4096] {
            assert!(look_back_rows(row, 4), "{row}");
            assert!(look_back_rows(row, 1), "{row}");
        }
        // Measured faster pipelined: longer rows, and any length that is
        // not a power of two; wider elements were not measured.
        for row in [100, 1000, 10_000, 8192, 65_536, 1 << 20] {
            assert!(!look_back_rows(row, 4), "{row}");
        }
        assert!(!look_back_rows(16, 8));
    }

    /// Tile sizes of three element sizes as the generator gives them for
    /// sm_90 (`kernels_gen::Layout`: tile, small tile, pipelined tile).
    const ELEMENTS: [(usize, usize, usize, usize); 3] = [
        (4, 4096, 1024, 8192),
        (16, 1536, 512, 2048),
        (256, 128, 64, 384),
    ];

    /// The path of every kind of request under every [`ScanPath`] and
    /// readiness, one line a request: the table is a snapshot
    /// (`src/snapshots`), so a change of path shows in review. Each cell
    /// is a path and four readiness cases (pipelined kernel / full-tile
    /// kernel: ready/ready, compiling/ready, cannot run/ready,
    /// ready/compiling) as letters: `-` empty, `1` one tile, `P`
    /// pipelined, `S` single pass in full tiles, `s` in small tiles, `R`
    /// reduce-then-scan.
    #[test]
    fn the_paths_of_every_kind_of_request() {
        use Readiness::{CannotRun, Compiling, Ready};
        let letter = |path: Path| match path {
            Path::Empty => '-',
            Path::OneTile => '1',
            Path::Pipelined { .. } => 'P',
            Path::SinglePass { small: false, .. } => 'S',
            Path::SinglePass { small: true, .. } => 's',
            Path::ReduceThenScan { .. } => 'R',
            Path::Deterministic { .. } => 'D',
            Path::Reduce { .. } => 'r',
        };
        let paths = [
            ScanPath::Auto,
            ScanPath::Pipelined,
            ScanPath::SinglePass,
            ScanPath::ReduceThenScan,
        ];
        let sources = [
            None,
            Some(Segments::FlagsOrOffsets),
            Some(Segments::Keys),
            Some(Segments::Rows(1024)),
            Some(Segments::Rows(1000)),
        ];
        let cases = [
            (Ready, Ready),
            (Compiling, Ready),
            (CannotRun, Ready),
            (Ready, Compiling),
        ];
        let mut table = String::from(
            "size n        segments                 direction aligned   Auto Pipe Single RtS\n",
        );
        for (size, tile, ..) in ELEMENTS {
            // 0, one tile, one past it, the small-tile limit and one past
            // it, past the pipelined pass's 2 MiB, past both.
            let limit = Tuning::default().small_tile_limit;
            let lengths = [
                0,
                1,
                tile,
                tile + 1,
                limit,
                limit + 1,
                (2 << 20) / size + 1,
                (2 << 20) / size + limit,
            ];
            for n in lengths {
                for segments in sources {
                    for direction in [Direction::Forward, Direction::Reverse] {
                        for aligned in [true, false] {
                            let request = Request {
                                direction,
                                segments,
                                aligned,
                                ..request(size, n)
                            };
                            let cells: Vec<String> = paths
                                .iter()
                                .map(|&path| {
                                    let tuning = Tuning::default().with_path(path);
                                    cases
                                        .iter()
                                        .map(|&(p, f)| letter(pick(&request, &tuning, p, f)))
                                        .collect()
                                })
                                .collect();
                            let _ = writeln!(
                                table,
                                "{size:>4} {n:<9} {:<24} {:<9} {aligned:<9} {}",
                                format!("{segments:?}"),
                                format!("{direction:?}"),
                                cells.join(" ")
                            );
                        }
                    }
                }
            }
        }
        insta::assert_snapshot!(table);
    }

    /// The whole plan of every kind of request on every [`ScanPath`] with
    /// its kernels ready: the launches in order, each its kernel (inclusive
    /// and exclusive, `op`'s symbols without their common prefix) and its
    /// tiles, then the scratch the plan uses. A snapshot (`src/snapshots`),
    /// so that a change of kernel, tile count, launch order or workspace
    /// shows in review.
    #[test]
    fn the_plans_of_every_kind_of_request() {
        use kernels_gen::abi::Family;
        use kernels_gen::{FlagFormat, SegmentSource};
        let strategy = Tuning::default().segmented_strategy;
        let family = |segments: Option<Segments>| match segments {
            None => Family::Plain,
            Some(Segments::FlagsOrOffsets) => {
                Family::Segmented(SegmentSource::Flags(FlagFormat::Bytes), strategy)
            }
            Some(Segments::Keys) => Family::Segmented(SegmentSource::Keys, strategy),
            Some(Segments::Rows(_)) => Family::Segmented(SegmentSource::Rows, strategy),
        };
        let mut table = String::from(
            "size n        segments             direction path           plan ; scratch\n",
        );
        for (size, tile, ..) in ELEMENTS {
            let limit = Tuning::default().small_tile_limit;
            for n in [0, tile, tile + 1, limit + 1, (2 << 20) / size + 1] {
                for segments in [
                    None,
                    Some(Segments::FlagsOrOffsets),
                    Some(Segments::Keys),
                    Some(Segments::Rows(1000)),
                ] {
                    for direction in [Direction::Forward, Direction::Reverse] {
                        for (path, deterministic) in [
                            (ScanPath::Auto, false),
                            (ScanPath::Pipelined, false),
                            (ScanPath::SinglePass, false),
                            (ScanPath::ReduceThenScan, false),
                            (ScanPath::Auto, true),
                            (ScanPath::ReduceThenScan, true),
                        ] {
                            let request = Request {
                                direction,
                                segments,
                                aligned: true,
                                ..request(size, n)
                            };
                            let tuning = Tuning::default()
                                .with_path(path)
                                .with_deterministic(deterministic);
                            let plan = pick(&request, &tuning, Readiness::Ready, Readiness::Ready);
                            let launches: Vec<String> = plan
                                .steps()
                                .map(|step| {
                                    let symbol = |inclusive| {
                                        family(segments)
                                            .kernel(step.pass, inclusive, direction)
                                            .expect("the plan's passes exist in the family")
                                            .symbol("op")
                                            .trim_start_matches("gpu_scan_op_")
                                            .to_string()
                                    };
                                    let (inclusive, exclusive) = (symbol(true), symbol(false));
                                    // One name for both kinds where they differ
                                    // only by the word.
                                    let kernels = if inclusive == exclusive {
                                        inclusive
                                    } else {
                                        let both = inclusive.replace("inclusive", "(in|ex)clusive");
                                        assert_eq!(
                                            exclusive,
                                            inclusive.replace("inclusive", "exclusive")
                                        );
                                        both
                                    };
                                    format!("{kernels}×{}", step.tiles)
                                })
                                .collect();
                            let _ = writeln!(
                                table,
                                "{size:>4} {n:<9} {:<20} {:<9} {:<14} {} ; {:?}",
                                format!("{segments:?}"),
                                format!("{direction:?}"),
                                if deterministic {
                                    format!("det {path:?}")
                                } else {
                                    format!("{path:?}")
                                },
                                launches.join(" → "),
                                plan.scratch(segments.is_some()),
                            );
                        }
                    }
                }
            }
        }
        insta::assert_snapshot!(table);
    }

    /// A reduction takes the deterministic scan's tiles and first two
    /// passes (so its total has the bits of that scan's carry-out), and
    /// nothing for no element.
    #[test]
    fn a_reduction_is_the_deterministic_chain_without_its_rescan() {
        for (size, ..) in ELEMENTS {
            let tile = shape_of(size).tile_items;
            assert_eq!(reduce(0, tile), Path::Empty);
            assert_eq!(reduce(0, tile).steps().count(), 0);
            for n in [1, 31, 32, 33, tile - 1, tile, tile + 1, 40 * tile + 1] {
                let path = reduce(n, tile);
                let tiles = n.div_ceil(tile);
                let steps: Vec<Step> = path.steps().collect();
                let scan = Path::Deterministic {
                    tiles,
                    one_pass: false,
                };
                let scan_steps: Vec<Step> = scan.steps().collect();
                assert_eq!(steps, scan_steps[..2], "{size} bytes, n = {n}");
                assert_eq!(scan_steps[2].pass, Pass::DeterministicScan);
                assert_eq!(
                    path.scratch(false),
                    Scratch::TileTotals {
                        tiles: deterministic_totals(tiles),
                        flags: false
                    }
                );
                let deterministic = Tuning::default()
                    .with_path(ScanPath::ReduceThenScan)
                    .with_deterministic(true);
                let ready = Readiness::Ready;
                assert_eq!(
                    pick(&request(size, n), &deterministic, ready, ready),
                    scan,
                    "{size} bytes, n = {n}"
                );
            }
        }
    }

    /// Tiles as the path says: the pipelined pass's, small or full ones.
    #[test]
    fn tiles_follow_the_path() {
        let request = request(4, (1 << 20) + 1);
        let auto = Tuning::default();
        let ready = Readiness::Ready;
        assert_eq!(
            pick(&request, &auto, ready, ready),
            Path::Pipelined { tiles: 129 }
        );
        assert_eq!(
            pick(&request, &auto, Readiness::Compiling, ready),
            Path::SinglePass {
                tiles: 1025,
                small: true
            }
        );
        let single = Tuning::default().with_path(ScanPath::SinglePass);
        assert_eq!(
            pick(&request, &single, ready, ready),
            Path::SinglePass {
                tiles: 257,
                small: false
            }
        );
        let reduce = Tuning::default().with_path(ScanPath::ReduceThenScan);
        assert_eq!(
            pick(&request, &reduce, ready, ready),
            Path::ReduceThenScan { tiles: 257 }
        );
    }

    #[test]
    fn the_reserved_scratch_covers_every_path_of_every_request() {
        use Readiness::{CannotRun, Ready};
        let cover = |reserved: Scratch, needed: Scratch| match (reserved, needed) {
            (_, Scratch::None) => true,
            (Scratch::SinglePass { tiles: r }, Scratch::SinglePass { tiles: n }) => r >= n,
            (Scratch::Deterministic { single_pass, .. }, Scratch::SinglePass { tiles }) => {
                single_pass >= tiles
            }
            (Scratch::Deterministic { totals, .. }, Scratch::TileTotals { tiles, .. }) => {
                totals >= tiles
            }
            (
                Scratch::TileTotals {
                    tiles: r,
                    flags: rf,
                },
                Scratch::TileTotals {
                    tiles: n,
                    flags: nf,
                },
            ) => r >= n && (rf || !nf),
            _ => false,
        };
        for (size, tile, ..) in ELEMENTS {
            let limit = Tuning::default().small_tile_limit;
            for n in [
                0,
                1,
                tile,
                tile + 1,
                limit,
                limit + 1,
                1 << 22,
                (1 << 22) + 1,
            ] {
                for (path, deterministic) in [
                    ScanPath::Auto,
                    ScanPath::Pipelined,
                    ScanPath::SinglePass,
                    ScanPath::ReduceThenScan,
                ]
                .into_iter()
                .flat_map(|path| [(path, false), (path, true)])
                {
                    let tuning = Tuning::default()
                        .with_path(path)
                        .with_deterministic(deterministic);
                    let mut request = request(size, n);
                    let reserved = reserved_scratch(&request, &tuning);
                    for segments in [None, Some(Segments::FlagsOrOffsets), Some(Segments::Keys)] {
                        request.segments = segments;
                        // Kernels ready or unable to run: the small tiles
                        // a scan takes while a kernel compiles in the
                        // background are not reserved for.
                        for (p, f) in [(Ready, Ready), (CannotRun, Ready)] {
                            let path_taken = pick(&request, &tuning, p, f);
                            let needed = path_taken.scratch(segments.is_some());
                            assert!(
                                cover(reserved, needed),
                                "{size} B, n = {n}, {path:?}, {segments:?}: {reserved:?} for {path_taken:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A deterministic tuning takes, for every plain request, the
    /// deterministic scan over its own tiles at every length: its one pass
    /// where the elements, alignment, path and a ready kernel allow it,
    /// else its three passes (the same chain); for every segmented one
    /// reduce-then-scan (or one tile). Never a look-back pass, whose
    /// combination order depends on timing.
    #[test]
    fn deterministic_scans_take_a_fixed_order_only() {
        use Readiness::{CannotRun, Compiling, Ready};
        for (size, tile, ..) in ELEMENTS {
            let shape = shape_of(size);
            for n in [1, tile - 1, tile, tile + 1, 1 << 15, (1 << 22) + 1] {
                for path in [
                    ScanPath::Auto,
                    ScanPath::Pipelined,
                    ScanPath::SinglePass,
                    ScanPath::ReduceThenScan,
                ] {
                    let tuning = Tuning::default().with_path(path).with_deterministic(true);
                    for segments in [
                        None,
                        Some(Segments::FlagsOrOffsets),
                        Some(Segments::Keys),
                        Some(Segments::Rows(16)),
                    ] {
                        for direction in [Direction::Forward, Direction::Reverse] {
                            for aligned in [true, false] {
                                let request = Request {
                                    direction,
                                    segments,
                                    aligned,
                                    ..request(size, n)
                                };
                                for (p, f) in
                                    [(Ready, Ready), (Compiling, Compiling), (CannotRun, Ready)]
                                {
                                    let taken = pick(&request, &tuning, p, f);
                                    let tiles = n.div_ceil(shape.tile_items);
                                    let expected = if segments.is_none() {
                                        Path::Deterministic {
                                            tiles,
                                            one_pass: shape.one_pass
                                                && aligned
                                                && p == Ready
                                                && matches!(
                                                    path,
                                                    ScanPath::Auto | ScanPath::Pipelined
                                                ),
                                        }
                                    } else if n <= tile {
                                        Path::OneTile
                                    } else {
                                        Path::ReduceThenScan {
                                            tiles: n.div_ceil(tile),
                                        }
                                    };
                                    assert_eq!(
                                        taken, expected,
                                        "{size} B, n = {n}, {path:?}, {segments:?}, {direction:?}, aligned {aligned}"
                                    );
                                }
                                let tiles = n.div_ceil(shape.tile_items);
                                assert_eq!(
                                    reserved_scratch(&request, &tuning),
                                    Scratch::Deterministic {
                                        single_pass: tiles,
                                        totals: (2 * tiles + 1).max(n.div_ceil(tile)),
                                    }
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn steps_and_scratch_follow_the_path() {
        let step = |pass, tiles| Step { pass, tiles };
        assert_eq!(Path::Empty.steps().collect::<Vec<_>>(), []);
        assert_eq!(Path::Empty.scratch(true), Scratch::None);
        assert_eq!(
            Path::OneTile.steps().collect::<Vec<_>>(),
            [step(Pass::ScanTiles, 1)]
        );
        assert_eq!(Path::OneTile.scratch(false), Scratch::None);
        let pipelined = Path::Pipelined { tiles: 9 };
        assert_eq!(
            pipelined.steps().collect::<Vec<_>>(),
            [step(Pass::Pipelined, 9)]
        );
        assert_eq!(pipelined.scratch(true), Scratch::SinglePass { tiles: 9 });
        let small = Path::SinglePass {
            tiles: 7,
            small: true,
        };
        assert_eq!(
            small.steps().collect::<Vec<_>>(),
            [step(Pass::SinglePassSmall, 7)]
        );
        assert_eq!(small.scratch(false), Scratch::SinglePass { tiles: 7 });
        let full = Path::SinglePass {
            tiles: 5,
            small: false,
        };
        assert_eq!(
            full.steps().collect::<Vec<_>>(),
            [step(Pass::SinglePass, 5)]
        );
        let reduce = Path::ReduceThenScan { tiles: 3 };
        assert_eq!(
            reduce.steps().collect::<Vec<_>>(),
            [
                step(Pass::ReduceTiles, 3),
                step(Pass::ScanTileTotals, 3),
                step(Pass::ScanTiles, 3)
            ]
        );
        for segmented in [false, true] {
            assert_eq!(
                reduce.scratch(segmented),
                Scratch::TileTotals {
                    tiles: 3,
                    flags: segmented
                }
            );
        }
        let one_pass = Path::Deterministic {
            tiles: 200,
            one_pass: true,
        };
        assert_eq!(
            one_pass.steps().collect::<Vec<_>>(),
            [step(Pass::DeterministicPipelined, 200)]
        );
        assert_eq!(one_pass.scratch(false), Scratch::SinglePass { tiles: 200 });
        let three = Path::Deterministic {
            tiles: 200,
            one_pass: false,
        };
        assert_eq!(
            three.steps().collect::<Vec<_>>(),
            [
                step(Pass::DeterministicReduce, 200),
                step(Pass::DeterministicPrefixes, 200),
                step(Pass::DeterministicScan, 200)
            ]
        );
        assert_eq!(
            three.scratch(false),
            Scratch::TileTotals {
                tiles: 401,
                flags: false
            }
        );
    }

    #[test]
    fn readiness_is_asked_only_when_the_choice_depends_on_it() {
        let request = request(4, 1 << 20);
        let single = Tuning::default().with_path(ScanPath::SinglePass);
        let Ok(path) = choose(&request, &single, &mut Fixed(None, Some(Readiness::Ready)));
        assert_eq!(
            path,
            Path::SinglePass {
                tiles: 256,
                small: false
            }
        );
        let auto = Tuning::default();
        let Ok(path) = choose(&request, &auto, &mut Fixed(Some(Readiness::Ready), None));
        assert_eq!(path, Path::Pipelined { tiles: 128 });
    }
}
