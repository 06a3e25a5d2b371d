//! Property tests of the control-message decoder: random bytes never panic it, never make
//! it allocate more than the frame limit, and valid frames survive any split into reads.

use interlab_live::proto::{decode, encode, read_msg, BaseCode, ChanSetup, Msg, Phase, ProtoError, Setup, Transport};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Records the largest single allocation made by this thread while armed.
struct Counting;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ARMED.try_with(|a| {
            if a.get() {
                let _ = LARGEST.try_with(|m| m.set(m.get().max(l.size())));
            }
        });
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let _ = ARMED.try_with(|a| {
            if a.get() {
                let _ = LARGEST.try_with(|m| m.set(m.get().max(n)));
            }
        });
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns its result with the largest allocation it made.
fn largest_alloc<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|m| m.set(0));
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    (r, LARGEST.with(|m| m.get()))
}

const MAX: usize = 4096;

/// A frame header with the right magic and version and an arbitrary type and length,
/// followed by arbitrary bytes: gets past the first checks far more often than pure noise.
fn plausible_frame() -> impl Strategy<Value = Vec<u8>> {
    (0u8..16, any::<u32>(), proptest::collection::vec(any::<u8>(), 0..600)).prop_map(|(ty, len, body)| {
        let mut v = vec![b'I', b'L', 1, ty];
        // Half the time a length that fits the body, to reach the payload decoders.
        let len = if len % 2 == 0 { body.len() as u32 } else { len };
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&body);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic_nor_overallocate(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let (r, big) = largest_alloc(|| decode(&bytes, MAX).map(|o| o.map(|(m, n)| (m.name(), n))));
        prop_assert!(big <= MAX, "decode allocated {big} bytes at once (limit {MAX})");
        if let Ok(Some((_, used))) = r {
            prop_assert!(used <= bytes.len());
        }
        let (r2, big2) = largest_alloc(|| read_msg(&mut &bytes[..], MAX).map(|m| m.name()));
        prop_assert!(big2 <= MAX, "read_msg allocated {big2} bytes at once (limit {MAX})");
        // Reading from a stream and decoding a buffer agree on what is wrong.
        if let (Err(ProtoError::BadMagic(_)), Ok(_)) = (&r2, &r) {
            prop_assert!(false, "read_msg saw bad magic where decode did not");
        }
    }

    #[test]
    fn plausible_frames_never_panic_nor_overallocate(bytes in plausible_frame()) {
        let (_, big) = largest_alloc(|| decode(&bytes, MAX).map(|o| o.map(|(m, _)| m.name())));
        prop_assert!(big <= MAX, "decode allocated {big} bytes at once (limit {MAX})");
        let (_, big2) = largest_alloc(|| read_msg(&mut &bytes[..], MAX).map(|m| m.name()));
        prop_assert!(big2 <= MAX, "read_msg allocated {big2} bytes at once (limit {MAX})");
    }

    #[test]
    fn valid_frames_survive_any_split(size in 1u64..1 << 30, window in 1u32..1000, chans in 1usize..20, cut in 0usize..200, id in any::<u32>()) {
        let setup = Msg::Setup(Setup {
            transport: Transport::Tcp,
            base: BaseCode::Windowed,
            size,
            response_size: size,
            window,
            channels: (0..chans as u32).map(|c| ChanSetup { chan: c, server_initiates: c % 2 == 1 }).collect(),
            sockbuf: 0,
        });
        let phase = Msg::Phase(Phase { id, warmup: 1, iterations: 2, warmup_ps: 3, duration_ps: 4 });
        let mut stream = encode(&setup);
        stream.extend(encode(&phase));
        let cut = cut.min(stream.len());
        // A prefix decodes to the first message or asks for more; never something else.
        match decode(&stream[..cut], MAX) {
            Ok(None) => {}
            Ok(Some((m, _))) => prop_assert_eq!(&m, &setup),
            Err(e) => prop_assert!(false, "valid prefix rejected: {e}"),
        }
        let (m1, n1) = decode(&stream, MAX).unwrap().unwrap();
        let (m2, _) = decode(&stream[n1..], MAX).unwrap().unwrap();
        prop_assert_eq!(m1, setup);
        prop_assert_eq!(m2, phase);
        // Flipping one payload byte gives a clean error or a different valid message, no panic.
        let mut bad = stream.clone();
        let i = 8 + (cut % (n1 - 8).max(1));
        bad[i] ^= 0xff;
        let _ = decode(&bad, MAX);
    }
}

#[test]
fn oversized_length_is_refused_before_reading() {
    let mut f = vec![b'I', b'L', 1, 5];
    f.extend_from_slice(&u32::MAX.to_be_bytes());
    let (r, big) = largest_alloc(|| read_msg(&mut &f[..], MAX).map(|m| m.name()));
    assert_eq!(r.unwrap_err(), ProtoError::TooLarge { len: u32::MAX as usize, max: MAX });
    assert!(big < 1024, "allocated {big}");
}
