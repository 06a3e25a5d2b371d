//! Text helpers shared by the SVG and HTML writers: XML escaping and number formatting.

/// Escapes `&`, `<`, `>`, `"` and `'` for use in XML/HTML text and attribute values,
/// and drops characters XML 1.0 forbids (control characters other than tab and line breaks).
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Formats `x` with `sig` significant digits, without trailing zeros and without an
/// exponent for magnitudes in 1e-4 .. 1e9 (`1234.6` → `1235` for 4 digits, `0.012345` →
/// `0.01235`). Non-finite values print as `NaN`, `inf`, `-inf`.
pub fn format_sig(x: f64, sig: u32) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let sig = sig.max(1) as i32;
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..9).contains(&magnitude) {
        return format!("{:.*e}", (sig - 1) as usize, x);
    }
    let decimals = (sig - 1 - magnitude).max(0) as usize;
    trim_zeros(format!("{x:.decimals$}"))
}

/// Formats `x` with exactly `decimals` decimals, then trims trailing zeros and a trailing
/// point; `-0` prints as `0`.
pub fn format_fixed(x: f64, decimals: usize) -> String {
    let s = trim_zeros(format!("{x:.decimals$}"));
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            escape_xml("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(escape_xml("x\u{1}y\nz"), "xy\nz");
    }

    #[test]
    fn significant_digits() {
        assert_eq!(format_sig(1234.6, 4), "1235");
        assert_eq!(format_sig(12650.0, 4), "12650");
        assert_eq!(format_sig(1.22, 4), "1.22");
        assert_eq!(format_sig(0.012345, 4), "0.01235");
        assert_eq!(format_sig(-3.0, 3), "-3");
        assert_eq!(format_sig(0.0, 3), "0");
        assert_eq!(format_sig(2.5e12, 3), "2.50e12");
        assert_eq!(format_sig(f64::NAN, 3), "NaN");
    }

    #[test]
    fn fixed() {
        assert_eq!(format_fixed(2.50, 2), "2.5");
        assert_eq!(format_fixed(-0.0001, 2), "0");
        assert_eq!(format_fixed(100.0, 0), "100");
    }
}
