//! Deterministic images for the web tier, as PNG files (8-bit palette, stored deflate,
//! padded with a tEXt chunk to an exact size):
//!
//! * item images `/img/item/{I_ID}.png`: sizes by I_ID mod 100 as TPC-W's image generator
//!   assigns them: 45% 5 KiB, 35% 10 KiB, 15% 50 KiB, 4% 100 KiB, 1% 250 KiB;
//! * thumbnails `/img/thumb/{I_ID}.png`: 5 KiB;
//! * the logo `/img/logo.png`: 8,721 bytes, and buttons `/img/btn/{name}.png`: 1,164 to
//!   1,697 bytes (the sizes of the TPC-W kit's GIFs).
//!
//! Same path, same bytes. Covers are drawn as books: a coloured board, spine, gilt rules,
//! a title plate with the item number.

/// Thumbnail size, bytes.
pub const THUMB_BYTES: usize = 5 * 1024;
/// Logo size, bytes.
pub const LOGO_BYTES: usize = 8_721;

/// Full-size image bytes for an item (TPC-W: by I_ID mod 100).
pub fn item_image_bytes(i_id: u64) -> usize {
    let kib = match i_id % 100 {
        0..=44 => 5,
        45..=79 => 10,
        80..=94 => 50,
        95..=98 => 100,
        _ => 250,
    };
    kib * 1024
}

/// The buttons: URL name, label, size in bytes.
pub const BUTTONS: [(&str, &str, usize); 8] = [
    ("home", "HOME", 1_164),
    ("search", "SEARCH", 1_297),
    ("cart", "SHOPPING CART", 1_697),
    ("checkout", "CHECKOUT", 1_402),
    ("orders", "ORDER STATUS", 1_650),
    ("add", "ADD TO CART", 1_588),
    ("buy", "BUY NOW", 1_335),
    ("update", "UPDATE", 1_226),
];

const PNG_SIG: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

fn crc_table() -> &'static [u32; 256] {
    static T: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = [0u32; 256];
        for (n, e) in t.iter_mut().enumerate() {
            let mut c = n as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            }
            *e = c;
        }
        t
    })
}

/// CRC-32 (ISO 3309, as PNG uses it).
pub fn crc32(parts: &[&[u8]]) -> u32 {
    let t = crc_table();
    let mut c = 0xffff_ffffu32;
    for p in parts {
        for &b in *p {
            c = t[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
    }
    c ^ 0xffff_ffff
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
}

/// A palette image being drawn.
pub struct Canvas {
    pub w: usize,
    pub h: usize,
    px: Vec<u8>,
    palette: Vec<[u8; 3]>,
}

/// Bytes a PNG of this canvas takes before padding.
fn encoded_len(w: usize, h: usize, colors: usize) -> usize {
    let raw = (w + 1) * h;
    let blocks = raw.div_ceil(65_535).max(1);
    8 + 25 + (12 + 3 * colors) + (12 + 2 + raw + 5 * blocks + 4) + 12
}

/// Smallest tEXt chunk (keyword "Comment", one byte of text).
const MIN_PAD: usize = 12 + 8 + 1;

impl Canvas {
    pub fn new(w: usize, h: usize, palette: Vec<[u8; 3]>) -> Canvas {
        Canvas { w, h, px: vec![0; w * h], palette }
    }

    pub fn fill(&mut self, x0: usize, y0: usize, x1: usize, y1: usize, c: u8) {
        for y in y0.min(self.h)..y1.min(self.h) {
            let row = y * self.w;
            for x in x0.min(self.w)..x1.min(self.w) {
                self.px[row + x] = c;
            }
        }
    }

    /// Draws text in the 5x7 font at `scale` pixels per dot; returns the width drawn.
    pub fn text(&mut self, x: usize, y: usize, s: &str, scale: usize, c: u8) -> usize {
        let mut cx = x;
        for ch in s.chars() {
            let g = glyph(ch);
            for (row, bits) in g.iter().enumerate() {
                for col in 0..5 {
                    if bits & (0x10 >> col) != 0 {
                        self.fill(cx + col * scale, y + row * scale, cx + (col + 1) * scale, y + (row + 1) * scale, c);
                    }
                }
            }
            cx += 6 * scale;
        }
        cx - x
    }

    /// Encodes, padding to exactly `target` bytes when the image is smaller.
    pub fn png(&self, target: usize) -> Vec<u8> {
        let mut raw = Vec::with_capacity((self.w + 1) * self.h);
        for y in 0..self.h {
            raw.push(0);
            raw.extend_from_slice(&self.px[y * self.w..(y + 1) * self.w]);
        }
        let mut z = vec![0x78, 0x01];
        let n = raw.len().div_ceil(65_535).max(1);
        for (i, block) in raw.chunks(65_535).enumerate() {
            z.push(if i + 1 == n { 1 } else { 0 });
            let len = block.len() as u16;
            z.extend_from_slice(&len.to_le_bytes());
            z.extend_from_slice(&(!len).to_le_bytes());
            z.extend_from_slice(block);
        }
        if raw.is_empty() {
            z.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
        }
        z.extend_from_slice(&adler32(&raw).to_be_bytes());
        let mut out = Vec::with_capacity(target.max(64));
        out.extend_from_slice(&PNG_SIG);
        let mut ihdr = Vec::with_capacity(13);
        ihdr.extend_from_slice(&(self.w as u32).to_be_bytes());
        ihdr.extend_from_slice(&(self.h as u32).to_be_bytes());
        ihdr.extend_from_slice(&[8, 3, 0, 0, 0]);
        chunk(&mut out, b"IHDR", &ihdr);
        let pal: Vec<u8> = self.palette.iter().flatten().copied().collect();
        chunk(&mut out, b"PLTE", &pal);
        chunk(&mut out, b"IDAT", &z);
        let left = target.saturating_sub(out.len() + 12);
        if left >= MIN_PAD {
            let mut t = b"Comment\0".to_vec();
            let text = left - 12 - t.len();
            t.extend((0..text).map(|i| b"interlab tpc-w bookstore image padding "[i % 39]));
            chunk(&mut out, b"tEXt", &t);
        }
        chunk(&mut out, b"IEND", &[]);
        out
    }
}

/// Largest 2:3 canvas whose PNG still leaves room for padding to `target` bytes.
fn cover_dims(target: usize, colors: usize) -> (usize, usize) {
    let mut w = (((target as f64) * 2.0 / 3.0).sqrt()) as usize + 2;
    loop {
        let h = w * 3 / 2;
        if w <= 8 || encoded_len(w, h, colors) + MIN_PAD <= target {
            return (w.max(8), (w * 3 / 2).max(12));
        }
        w -= 1;
    }
}

const COVER_COLORS: [[u8; 3]; 12] = [
    [0x8b, 0x1e, 0x2d],
    [0x1f, 0x4e, 0x79],
    [0x2e, 0x6b, 0x3f],
    [0x6a, 0x3d, 0x8f],
    [0xb3, 0x6b, 0x00],
    [0x0f, 0x6e, 0x6e],
    [0x44, 0x44, 0x4c],
    [0x9c, 0x3d, 0x54],
    [0x3b, 0x5b, 0x2a],
    [0x2c, 0x3e, 0x75],
    [0x7a, 0x4a, 0x2b],
    [0x1d, 0x5c, 0x8a],
];

fn shade(c: [u8; 3], f: f64) -> [u8; 3] {
    [(c[0] as f64 * f).min(255.0) as u8, (c[1] as f64 * f).min(255.0) as u8, (c[2] as f64 * f).min(255.0) as u8]
}

/// A book cover for item `i_id` of exactly `target` bytes.
pub fn cover(i_id: u64, target: usize) -> Vec<u8> {
    let base = COVER_COLORS[(i_id.wrapping_mul(7) % 12) as usize];
    let palette = vec![
        base,
        shade(base, 0.6),
        [0xd4, 0xaf, 0x37],
        [0xf5, 0xef, 0xe0],
        [0x22, 0x22, 0x22],
        shade(base, 1.35),
        [0xff, 0xff, 0xff],
        [0x99, 0x88, 0x66],
    ];
    let (w, h) = cover_dims(target, palette.len());
    let mut c = Canvas::new(w, h, palette);
    let spine = (w / 9).max(2);
    c.fill(0, 0, spine, h, 1);
    c.fill(spine, 0, spine + (w / 60).max(1), h, 5);
    // Gilt rules near top and bottom.
    let t = (h / 60).max(1);
    for y in [h / 12, h / 12 + 3 * t, h - h / 12 - 4 * t, h - h / 12 - t] {
        c.fill(spine + w / 12, y, w - w / 12, y + t, 2);
    }
    // Title plate with the item number.
    let (px0, py0, px1, py1) = (spine + w / 8, h / 4, w - w / 10, h / 4 + h / 4);
    c.fill(px0, py0, px1, py1, 3);
    c.fill(px0, py0, px1, py0 + t, 7);
    c.fill(px0, py1 - t, px1, py1, 7);
    let label = format!("NO {i_id}");
    let avail = px1.saturating_sub(px0 + 4);
    let scale = (avail / (6 * label.len()).max(1)).clamp(1, 4);
    let tw = 6 * scale * label.len();
    let tx = px0 + (px1 - px0).saturating_sub(tw) / 2;
    let ty = py0 + (py1 - py0).saturating_sub(7 * scale) / 2;
    c.text(tx, ty, &label, scale, 4);
    // An emblem: a diamond below the plate.
    let (cx, cy, r) = (spine + (w - spine) / 2, h * 5 / 8 + h / 16, (w / 8).max(2));
    for dy in 0..=r {
        let half = r - dy;
        c.fill(cx - half.min(cx), cy + dy, cx + half + 1, cy + dy + 1, 2);
        c.fill(cx - half.min(cx), cy.saturating_sub(dy), cx + half + 1, cy.saturating_sub(dy) + 1, 2);
    }
    c.png(target)
}

/// The store logo (8,721 bytes).
pub fn logo() -> Vec<u8> {
    let palette = vec![[0x0f, 0x3d, 0x3e], [0xff, 0xff, 0xff], [0xd4, 0xaf, 0x37], [0x8b, 0x1e, 0x2d], [0x1f, 0x4e, 0x79]];
    let (w, h) = (300, 28);
    let mut c = Canvas::new(w, h, palette);
    // A small open book.
    c.fill(6, 7, 17, 21, 1);
    c.fill(18, 7, 29, 21, 1);
    c.fill(17, 5, 18, 23, 2);
    for y in [10, 13, 16] {
        c.fill(8, y, 15, y + 1, 4);
        c.fill(20, y, 27, y + 1, 3);
    }
    c.text(38, 4, "TPC-W BOOKSTORE", 3, 1);
    c.fill(38, 25, 296, 26, 2);
    c.png(LOGO_BYTES)
}

/// A button image, or None for an unknown name.
pub fn button(name: &str) -> Option<Vec<u8>> {
    let &(_, label, bytes) = BUTTONS.iter().find(|b| b.0 == name)?;
    let palette = vec![[0xff, 0xff, 0xff], [0x8b, 0x1e, 0x2d], [0xff, 0xff, 0xff], [0x5e, 0x12, 0x1d]];
    let w = 6 * label.len() + 13;
    let h = 17;
    let mut c = Canvas::new(w, h, palette);
    c.fill(1, 0, w - 1, h, 1);
    c.fill(0, 1, w, h - 1, 1);
    c.fill(1, h - 2, w - 1, h - 1, 3);
    c.text(7, 5, label, 1, 2);
    Some(c.png(bytes))
}

/// The image at a web path (`/img/...`), or None.
pub fn for_path(path: &str) -> Option<Vec<u8>> {
    let rest = path.strip_prefix("/img/")?;
    if rest == "logo.png" {
        return Some(logo());
    }
    if let Some(n) = rest.strip_prefix("btn/").and_then(|s| s.strip_suffix(".png")) {
        return button(n);
    }
    let id = |s: &str| s.strip_suffix(".png").and_then(|n| n.parse::<u64>().ok()).filter(|&i| (1..=100_000_000).contains(&i));
    if let Some(i) = rest.strip_prefix("thumb/").and_then(id) {
        return Some(cover(i, THUMB_BYTES));
    }
    if let Some(i) = rest.strip_prefix("item/").and_then(id) {
        return Some(cover(i, item_image_bytes(i)));
    }
    None
}

fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        'A' => [0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11],
        'B' => [0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e],
        'C' => [0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e],
        'D' => [0x1e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1e],
        'E' => [0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f],
        'F' => [0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10],
        'G' => [0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f],
        'H' => [0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11],
        'I' => [0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f],
        'M' => [0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e],
        'P' => [0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10],
        'Q' => [0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d],
        'R' => [0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11],
        'S' => [0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e],
        'T' => [0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a],
        'X' => [0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04],
        'Z' => [0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f],
        '0' => [0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e],
        '1' => [0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e],
        '2' => [0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f],
        '3' => [0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e],
        '4' => [0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02],
        '5' => [0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e],
        '6' => [0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e],
        '7' => [0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e],
        '9' => [0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c],
        '-' => [0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00],
        '.' => [0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c],
        ':' => [0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00],
        '#' => [0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a],
        '&' => [0x0c, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0d],
        '/' => [0x01, 0x02, 0x02, 0x04, 0x08, 0x08, 0x10],
        '!' => [0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04],
        _ => [0; 7],
    }
}

/// The same picture sizes as GIF or JPEG (the strict `serve` mode serves a site's images
/// the way servlet kits do: GIF buttons, logo and thumbnails, JPEG item images). A small
/// drawing padded with comment blocks to exactly `target` bytes (when `target` is at least
/// the drawing's size plus 5 bytes: GIF 531, JPEG 188).
pub fn gif(seed: u64, target: usize) -> Vec<u8> {
    const W: usize = 24;
    const H: usize = 36;
    let hue = (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as u8;
    let palette: [[u8; 3]; 4] = [[0x0f, 0x3d, 0x3e], [hue, 0x40, 0x50], [0xd4, 0xaf, 0x37], [0xf4, 0xef, 0xe6]];
    let mut px = vec![0u8; W * H];
    for y in 0..H {
        for x in 0..W {
            px[y * W + x] = if x < 3 { 0 } else if y == 4 || y == H - 5 { 2 } else if (10..16).contains(&y) && (6..W - 3).contains(&x) { 3 } else { 1 };
        }
    }
    let mut out = b"GIF89a".to_vec();
    out.extend_from_slice(&(W as u16).to_le_bytes());
    out.extend_from_slice(&(H as u16).to_le_bytes());
    out.extend_from_slice(&[0x81, 0, 0]); // global table of 4 colours
    for c in palette {
        out.extend_from_slice(&c);
    }
    out.extend_from_slice(&[0x2c, 0, 0, 0, 0]);
    out.extend_from_slice(&(W as u16).to_le_bytes());
    out.extend_from_slice(&(H as u16).to_le_bytes());
    out.push(0);
    // LZW with minimum code size 2: a clear code before every two literals keeps the
    // codes 3 bits wide (the table never reaches 8 entries).
    out.push(2);
    let (clear, eoi) = (4u32, 5u32);
    let mut bits: Vec<u8> = Vec::new();
    let (mut acc, mut n) = (0u32, 0u32);
    let mut put = |code: u32, bits: &mut Vec<u8>| {
        acc |= code << n;
        n += 3;
        while n >= 8 {
            bits.push(acc as u8);
            acc >>= 8;
            n -= 8;
        }
    };
    for (k, &p) in px.iter().enumerate() {
        if k % 2 == 0 {
            put(clear, &mut bits);
        }
        put(p as u32, &mut bits);
    }
    put(eoi, &mut bits);
    if n > 0 {
        bits.push(acc as u8);
    }
    for b in bits.chunks(255) {
        out.push(b.len() as u8);
        out.extend_from_slice(b);
    }
    out.push(0);
    // Padding: comment extensions (21 FE, sub-blocks, 00) before the trailer.
    let mut pad = target.saturating_sub(out.len() + 1);
    let cost = |c: usize| 3 + c + c.div_ceil(255);
    if pad >= 3 {
        let ext = |c: usize, out: &mut Vec<u8>| {
            out.extend_from_slice(&[0x21, 0xfe]);
            let mut left = c;
            while left > 0 {
                let k = left.min(255);
                out.push(k as u8);
                out.extend(std::iter::repeat_n(b' ', k));
                left -= k;
            }
            out.push(0);
        };
        // c + ceil(c/255) skips one value every 256; an empty extension (3 bytes) covers it.
        let exact = (0..=pad).rev().find(|&c| cost(c) <= pad).filter(|&c| cost(c) == pad);
        match exact {
            Some(c) => ext(c, &mut out),
            None if pad >= 6 => {
                ext(0, &mut out);
                pad -= 3;
                if let Some(c) = (0..=pad).rev().find(|&c| cost(c) == pad) {
                    ext(c, &mut out);
                }
            }
            None => {}
        }
    }
    out.push(0x3b);
    out
}

/// An 8x8 grey baseline JPEG (one block, DC only), padded with COM segments to `target` bytes.
pub fn jpeg(target: usize) -> Vec<u8> {
    let mut out = vec![0xff, 0xd8];
    out.extend_from_slice(&[0xff, 0xe0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]);
    out.extend_from_slice(&[0xff, 0xdb, 0x00, 0x43, 0x00]);
    out.extend(std::iter::repeat_n(1u8, 64));
    out.extend_from_slice(&[0xff, 0xc0, 0x00, 0x0b, 8, 0, 8, 0, 8, 1, 1, 0x11, 0]);
    for class in [0x00u8, 0x10] {
        // One code of length 1 ("0"): DC category 0, AC end-of-block.
        out.extend_from_slice(&[0xff, 0xc4, 0x00, 0x14, class, 1]);
        out.extend(std::iter::repeat_n(0u8, 15));
        out.push(0);
    }
    out.extend_from_slice(&[0xff, 0xda, 0x00, 0x08, 1, 1, 0x00, 0, 0x3f, 0]);
    out.push(0x3f); // "0" (DC diff 0) "0" (EOB), padded with ones
    let mut pad = target.saturating_sub(out.len() + 2);
    while pad >= 4 {
        let mut seg = pad.min(65_537);
        if (1..4).contains(&(pad - seg)) {
            seg -= 4;
        }
        let len = (seg - 2) as u16;
        let mut com = vec![0xff, 0xfe];
        com.extend_from_slice(&len.to_be_bytes());
        com.extend(std::iter::repeat_n(b' ', seg - 4));
        // Segments go before the scan: after APP0 (index 20).
        let at = 20;
        out.splice(at..at, com);
        pad -= seg;
    }
    out.extend_from_slice(&[0xff, 0xd9]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_png(b: &[u8]) -> (u32, u32) {
        assert_eq!(&b[..8], &PNG_SIG);
        // Walk the chunks, checking each CRC.
        let mut i = 8;
        let mut dims = (0, 0);
        let mut seen_end = false;
        while i + 12 <= b.len() {
            let len = u32::from_be_bytes(b[i..i + 4].try_into().unwrap()) as usize;
            let kind = &b[i + 4..i + 8];
            let data = &b[i + 8..i + 8 + len];
            let crc = u32::from_be_bytes(b[i + 8 + len..i + 12 + len].try_into().unwrap());
            assert_eq!(crc, crc32(&[kind, data]), "crc of {:?}", std::str::from_utf8(kind));
            if kind == b"IHDR" {
                dims = (u32::from_be_bytes(data[0..4].try_into().unwrap()), u32::from_be_bytes(data[4..8].try_into().unwrap()));
            }
            if kind == b"IEND" {
                seen_end = true;
            }
            i += 12 + len;
        }
        assert!(seen_end && i == b.len());
        dims
    }

    #[test]
    fn sizes_follow_tpcw_and_pngs_are_well_formed() {
        for (id, want) in [(1u64, 5120), (45, 10_240), (80, 51_200), (95, 102_400), (99, 256_000), (12_345, 10_240)] {
            let b = for_path(&format!("/img/item/{id}.png")).unwrap();
            assert_eq!(b.len(), want, "item {id}");
            let (w, h) = check_png(&b);
            assert!(w >= 40 && h >= 60, "{w}x{h}");
        }
        let t = for_path("/img/thumb/7.png").unwrap();
        assert_eq!(t.len(), THUMB_BYTES);
        check_png(&t);
        let l = for_path("/img/logo.png").unwrap();
        assert_eq!(l.len(), LOGO_BYTES);
        check_png(&l);
        for (n, _, bytes) in BUTTONS {
            let b = for_path(&format!("/img/btn/{n}.png")).unwrap();
            assert_eq!(b.len(), bytes, "{n}");
            check_png(&b);
        }
        assert!(for_path("/img/btn/nope.png").is_none());
        assert!(for_path("/img/item/0.png").is_none());
        assert!(for_path("/img/item/x.png").is_none());
        assert!(for_path("/etc/passwd").is_none());
    }

    #[test]
    fn deterministic() {
        assert_eq!(for_path("/img/item/99.png"), for_path("/img/item/99.png"));
        assert_ne!(for_path("/img/thumb/1.png"), for_path("/img/thumb/2.png"));
        // Mean full-image size: 0.45*5 + 0.35*10 + 0.15*50 + 0.04*100 + 0.01*250 = 19.75 KiB.
        let mean = (1..=100).map(item_image_bytes).sum::<usize>() as f64 / 100.0 / 1024.0;
        assert!((mean - 19.75).abs() < 1e-9);
    }

    /// A GIF decoder for the test: returns (width, height, pixels decoded).
    fn decode_gif(b: &[u8]) -> (usize, usize, usize) {
        assert!(b.starts_with(b"GIF89a") && b.ends_with(&[0x3b]));
        let w = u16::from_le_bytes([b[6], b[7]]) as usize;
        let h = u16::from_le_bytes([b[8], b[9]]) as usize;
        let gct = 3 << ((b[10] & 7) + 1);
        let mut i = 13 + gct;
        assert_eq!(b[i], 0x2c);
        i += 10;
        let min = b[i] as u32;
        i += 1;
        let mut data = Vec::new();
        while b[i] != 0 {
            let n = b[i] as usize;
            data.extend_from_slice(&b[i + 1..i + 1 + n]);
            i += 1 + n;
        }
        // LZW decode (enough for the test: counts output pixels).
        let (clear, eoi) = (1u32 << min, (1u32 << min) + 1);
        let (mut width, mut next) = (min + 1, eoi + 1);
        let mut table: Vec<Vec<u8>> = (0..(1u32 << min)).map(|c| vec![c as u8]).collect();
        table.push(vec![]);
        table.push(vec![]);
        let (mut pos, mut prev): (usize, Option<Vec<u8>>) = (0, None);
        let mut out = 0usize;
        loop {
            let mut code = 0u32;
            for k in 0..width {
                let bit = (data[(pos + k as usize) / 8] >> ((pos + k as usize) % 8)) & 1;
                code |= (bit as u32) << k;
            }
            pos += width as usize;
            if code == clear {
                table.truncate((1 << min) + 2);
                width = min + 1;
                next = eoi + 1;
                prev = None;
                continue;
            }
            if code == eoi {
                break;
            }
            let entry = if (code as usize) < table.len() { table[code as usize].clone() } else { let p = prev.clone().unwrap(); let mut e = p.clone(); e.push(p[0]); e };
            if let Some(p) = prev {
                let mut e = p.clone();
                e.push(entry[0]);
                table.push(e);
                next += 1;
                if next == (1 << width) && width < 12 {
                    width += 1;
                }
            }
            out += entry.len();
            prev = Some(entry);
        }
        // Comment extensions then the trailer.
        i += 1;
        while b[i] == 0x21 {
            assert_eq!(b[i + 1], 0xfe);
            i += 2;
            while b[i] != 0 {
                i += 1 + b[i] as usize;
            }
            i += 1;
        }
        assert_eq!(i, b.len() - 1);
        (w, h, out)
    }

    #[test]
    fn gif_and_jpeg_of_exact_sizes() {
        for target in [0usize, 600, 1164, 1697, 5 * 1024, 8721, 10 * 1024, 50 * 1024, 250 * 1024] {
            for seed in [1u64, 7, 99] {
                let g = gif(seed, target);
                if target >= 600 {
                    assert_eq!(g.len(), target, "gif {target}");
                }
                assert_eq!(decode_gif(&g), (24, 36, 24 * 36));
            }
            let j = jpeg(target);
            if target >= 600 {
                assert_eq!(j.len(), target, "jpeg {target}");
            }
            assert!(j.starts_with(&[0xff, 0xd8, 0xff, 0xe0]) && j.ends_with(&[0xff, 0xd9]));
        }
        // Every padding size from the smallest reachable one up is exact.
        let base = gif(1, 0).len();
        for t in base + 5..base + 1200 {
            assert_eq!(gif(1, t).len(), t, "gif {t}");
        }
    }
}
