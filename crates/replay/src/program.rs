//! Request programs: the steps a workload writes for a request, kept encoded in 8 bytes a
//! step ([`Code`]) instead of the 16 of a [`Step`]. A replay's time goes mostly into cache
//! misses on the state of requests in flight, and the largest part of it was reading their
//! programs (a program is written at the request's start and read a step or two per event,
//! a queue wait or a round trip later): at half the size a program spans half the cache
//! lines. Values too large for a step's word (never in the studies: over 2^51 bytes or ns)
//! take a second word, so every program is kept exactly.

/// One step of a request program. A program is a flat list of steps: a `Fork(n)` is
/// followed by its `n` programs, each ended by a `Join`, and the forking program goes on
/// after the last of them. Workloads write steps into a [`Program`], which encodes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Take a connection of `link` (dedicated pools: connection `slot`).
    Acquire { link: u8, slot: u32 },
    /// Give it back.
    Release { link: u8 },
    /// Open the held connection afresh (set-up time).
    Connect { link: u8 },
    /// A message of `bytes` on the held connection: `up` = from the link's lower tier back
    /// to its upper tier (a response), else a request.
    Send { link: u8, bytes: u64, up: bool },
    /// CPU work on a tier.
    Cpu { tier: u8, ns: u64 },
    /// Record the time in mark `k`.
    Mark(u8),
    /// Run the `n` programs that follow (each ended by [`Step::Join`]) in parallel and wait
    /// for all.
    Fork(u32),
    /// The end of a forked program.
    Join,
}

/// A step in one 64-bit word: bits 0-2 its kind, 3-10 its link, tier or mark, 11 `up`,
/// 12 "the value is in the next word", 13-63 its value (slot, bytes, ns or programs
/// forked) if below 2^51. A word after a wide step holds its value whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(u64);

const ACQUIRE: u64 = 0;
const RELEASE: u64 = 1;
const CONNECT: u64 = 2;
const SEND: u64 = 3;
const CPU: u64 = 4;
const MARK: u64 = 5;
const FORK: u64 = 6;
const JOIN: u64 = 7;
const ARG_SHIFT: u32 = 3;
const UP: u64 = 1 << 11;
const WIDE: u64 = 1 << 12;
const VALUE_SHIFT: u32 = 13;
/// Values below this fit in the step's word.
const NARROW: u64 = 1 << (64 - VALUE_SHIFT);

impl Code {
    /// A `Join` (what the unused places of a chunk hold).
    pub(crate) const JOIN: Code = Code(JOIN);

    #[inline(always)]
    fn kind(self) -> u64 {
        self.0 & 7
    }
}

/// The step at `i` of `codes` and the words it takes (2 for a wide value, else 1). `i`
/// must be the place of a step (not of a wide step's value).
#[inline(always)]
pub(crate) fn step_at(codes: &[Code], i: usize) -> (Step, u32) {
    let c = codes[i].0;
    let (v, n) = if c & WIDE != 0 { (codes[i + 1].0, 2) } else { (c >> VALUE_SHIFT, 1) };
    let a = (c >> ARG_SHIFT) as u8;
    let s = match c & 7 {
        ACQUIRE => Step::Acquire { link: a, slot: v as u32 },
        RELEASE => Step::Release { link: a },
        CONNECT => Step::Connect { link: a },
        SEND => Step::Send { link: a, bytes: v, up: c & UP != 0 },
        CPU => Step::Cpu { tier: a, ns: v },
        MARK => Step::Mark(a),
        FORK => Step::Fork(v as u32),
        _ => Step::Join,
    };
    (s, n)
}

/// Place of the `Join` that ends the program starting at `start` of `codes` (forks inside
/// it skipped whole), or `codes.len()` if none does (the outermost program).
pub(crate) fn program_end(codes: &[Code], start: usize) -> usize {
    // `Join`s that end programs forked inside this one, still to pass.
    let mut inner = 0u64;
    let mut i = start;
    while i < codes.len() {
        let c = codes[i];
        match c.kind() {
            JOIN if inner == 0 => return i,
            JOIN => inner -= 1,
            // A fork's count is below 2^32: never wide.
            FORK => inner += c.0 >> VALUE_SHIFT,
            _ => {}
        }
        i += 1 + usize::from(c.0 & WIDE != 0);
    }
    codes.len()
}

/// A request's program as a workload writes it (see [`Step`]), encoded.
#[derive(Debug, Clone, Default)]
pub struct Program {
    codes: Vec<Code>,
}

impl Program {
    pub fn new() -> Program {
        Program::default()
    }

    /// Appends `s`. Inlined, so a step of a kind known where it is written is encoded
    /// without a branch on its kind.
    #[inline(always)]
    pub fn push(&mut self, s: Step) {
        let (kind, arg, up, v) = match s {
            Step::Acquire { link, slot } => (ACQUIRE, link, false, u64::from(slot)),
            Step::Release { link } => (RELEASE, link, false, 0),
            Step::Connect { link } => (CONNECT, link, false, 0),
            Step::Send { link, bytes, up } => (SEND, link, up, bytes),
            Step::Cpu { tier, ns } => (CPU, tier, false, ns),
            Step::Mark(k) => (MARK, k, false, 0),
            Step::Fork(n) => (FORK, 0, false, u64::from(n)),
            Step::Join => (JOIN, 0, false, 0),
        };
        let head = kind | u64::from(arg) << ARG_SHIFT | if up { UP } else { 0 };
        if v < NARROW {
            self.codes.push(Code(head | v << VALUE_SHIFT));
        } else {
            self.codes.extend([Code(head | WIDE), Code(v)]);
        }
    }

    /// Appends every step of `steps`.
    pub fn extend(&mut self, steps: impl IntoIterator<Item = Step>) {
        steps.into_iter().for_each(|s| self.push(s));
    }

    /// Words (a step with a wide value takes two).
    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    pub fn clear(&mut self) {
        self.codes.clear();
    }

    /// The steps, decoded.
    pub fn steps(&self) -> Vec<Step> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.codes.len() {
            let (s, n) = step_at(&self.codes, i);
            out.push(s);
            i += n as usize;
        }
        out
    }

    pub(crate) fn codes(&self) -> &[Code] {
        &self.codes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlab_kernel::Rng;

    /// Index of the `Join` ending the program at `start` of `steps`, on the steps
    /// themselves (the definition the encoded scan must agree with).
    fn end_of(steps: &[Step], start: usize) -> usize {
        let mut inner = 0u64;
        for (i, s) in steps.iter().enumerate().skip(start) {
            match *s {
                Step::Join if inner == 0 => return i,
                Step::Join => inner -= 1,
                Step::Fork(n) => inner += u64::from(n),
                _ => {}
            }
        }
        steps.len()
    }

    fn random_step(rng: &mut Rng) -> Step {
        // Values at the edges of a word's room, and whole 64-bit ones.
        let v = [0, 1, NARROW - 1, NARROW, NARROW + 1, u64::MAX, rng.below(1 << 20), rng.next_u64()][rng.below(8) as usize];
        let a = rng.below(256) as u8;
        match rng.below(8) {
            0 => Step::Acquire { link: a, slot: v as u32 },
            1 => Step::Release { link: a },
            2 => Step::Connect { link: a },
            3 => Step::Send { link: a, bytes: v, up: rng.below(2) == 0 },
            4 => Step::Cpu { tier: a, ns: v },
            5 => Step::Mark(a),
            6 => Step::Fork(rng.below(4) as u32),
            _ => Step::Join,
        }
    }

    /// Random programs (every kind, values that fit a word and values that do not) decode
    /// to the steps written, and the end of every forked program found on the words is
    /// the one found on the steps (wide values are never read as steps).
    #[test]
    fn programs_decode_to_their_steps_and_forks_end_alike() {
        let mut rng = Rng::stream(9, 0);
        let mut wide = 0;
        for _ in 0..3000 {
            let steps: Vec<Step> = (0..rng.below(40)).map(|_| random_step(&mut rng)).collect();
            let mut p = Program::new();
            p.extend(steps.iter().copied());
            assert_eq!(p.steps(), steps);
            wide += p.len() - steps.len();
            // Place of each step among the words.
            let mut at = Vec::new();
            let mut i = 0;
            while i < p.len() {
                at.push(i);
                i += step_at(p.codes(), i).1 as usize;
            }
            at.push(p.len());
            for k in 0..=steps.len() {
                assert_eq!(program_end(p.codes(), at[k]), at[end_of(&steps, k)], "{steps:?} from {k}");
            }
        }
        assert!(wide > 1000, "wide values: {wide}");
        // The narrow limit itself: one word below it, two from it on.
        let mut p = Program::new();
        p.push(Step::Send { link: 3, bytes: NARROW - 1, up: true });
        assert_eq!(p.len(), 1);
        p.push(Step::Cpu { tier: 2, ns: NARROW });
        assert_eq!(p.len(), 3);
        assert_eq!(p.steps(), [Step::Send { link: 3, bytes: NARROW - 1, up: true }, Step::Cpu { tier: 2, ns: NARROW }]);
    }

    /// `program_end` finds the `Join` of a forked program, skipping forks inside it.
    #[test]
    fn a_forked_programs_end_skips_the_forks_inside_it() {
        use Step::*;
        let mut p = Program::new();
        p.extend([Mark(0), Fork(2), Mark(1), Fork(1), Mark(2), Join, Join, Mark(3), Join, Mark(0)]);
        let c = p.codes();
        assert_eq!(program_end(c, 0), c.len());
        assert_eq!(program_end(c, 2), 6);
        assert_eq!(program_end(c, 4), 5);
        assert_eq!(program_end(c, 7), 8);
        // A fork without its joins ends at the program's end (no panic).
        let mut q = Program::new();
        q.extend([Fork(3), Mark(1)]);
        assert_eq!(program_end(q.codes(), 0), 2);
    }
}
