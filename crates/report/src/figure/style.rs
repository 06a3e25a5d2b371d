//! Colours, marker shapes and fonts of the figures.

use super::svg_num as n;

/// Okabe-Ito colours (colour-blind safe), most distinct first; black is kept for
/// published values and yellow, weak on white, comes last.
pub(crate) const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#D4C12A",
];

/// Colour of published values (marks).
pub(crate) const MARK_COLOUR: &str = "#111111";

/// Font stack of all figure text; no web fonts.
pub(crate) const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

/// Estimated width in px of `text` at `size` px in a sans-serif face, for layout only.
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    text.chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | 'I' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.3,
            'f' | 't' | 'r' | ' ' | '(' | ')' | '[' | ']' | '-' | '/' => 0.38,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.88,
            c if c.is_ascii_uppercase() => 0.68,
            _ => 0.57,
        })
        .sum::<f64>()
        * size
}

/// Shortens `text` with an ellipsis so that it fits `max_width` px at `size` px.
pub(crate) fn fit_text(text: &str, size: f64, max_width: f64) -> String {
    if text_width(text, size) <= max_width {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        out.push(c);
        if text_width(&out, size) + 0.6 * size > max_width {
            out.pop();
            break;
        }
    }
    format!("{}\u{2026}", out.trim_end())
}

/// Breaks `text` at spaces into lines that fit `max_width` px at `size` px (a single word
/// wider than that is shortened with an ellipsis). Never returns an empty list: an empty
/// text is one empty line. Nothing is dropped except surplus spaces.
pub(crate) fn wrap_text(text: &str, size: f64, max_width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if text_width(&candidate, size) <= max_width || line.is_empty() {
            line = candidate;
        } else {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        }
        if text_width(&line, size) > max_width {
            lines.push(fit_text(&line, size, max_width));
            line.clear();
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Filled marker shapes of model series (the diamond is reserved for published values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    TriangleUp,
    TriangleDown,
    Hexagon,
    Diamond,
}

/// Shapes for series, in order.
pub(crate) const SERIES_MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::TriangleDown,
    Marker::Hexagon,
];

impl Marker {
    /// SVG element of the marker centred on (`x`, `y`) px with radius about `r` px.
    pub(crate) fn svg(
        self,
        x: f64,
        y: f64,
        r: f64,
        fill: &str,
        stroke: &str,
        stroke_width: f64,
    ) -> String {
        let paint = format!(
            r#"fill="{fill}" stroke="{stroke}" stroke-width="{}""#,
            n(stroke_width)
        );
        let poly = |pts: &[(f64, f64)]| {
            let d: Vec<String> = pts
                .iter()
                .map(|(dx, dy)| format!("{},{}", n(x + dx * r), n(y + dy * r)))
                .collect();
            format!(r#"<polygon points="{}" {paint}/>"#, d.join(" "))
        };
        match self {
            Marker::Circle => format!(
                r#"<circle cx="{}" cy="{}" r="{}" {paint}/>"#,
                n(x),
                n(y),
                n(r)
            ),
            Marker::Square => {
                let s = r * 0.85;
                format!(
                    r#"<rect x="{}" y="{}" width="{}" height="{}" {paint}/>"#,
                    n(x - s),
                    n(y - s),
                    n(2.0 * s),
                    n(2.0 * s)
                )
            }
            Marker::TriangleUp => poly(&[(0.0, -1.2), (1.1, 0.8), (-1.1, 0.8)]),
            Marker::TriangleDown => poly(&[(0.0, 1.2), (1.1, -0.8), (-1.1, -0.8)]),
            Marker::Hexagon => poly(&[
                (0.0, -1.1),
                (0.95, -0.55),
                (0.95, 0.55),
                (0.0, 1.1),
                (-0.95, 0.55),
                (-0.95, -0.55),
            ]),
            Marker::Diamond => poly(&[(0.0, -1.3), (1.0, 0.0), (0.0, 1.3), (-1.0, 0.0)]),
        }
    }
}

/// Colour, marker and dash pattern of the `index`-th series.
pub(crate) struct SeriesStyle {
    pub colour: &'static str,
    pub marker: Marker,
    /// `stroke-dasharray` value, if any.
    pub dash: Option<&'static str>,
}

impl SeriesStyle {
    pub(crate) fn of(index: usize, dashed: bool) -> SeriesStyle {
        let colour = PALETTE[index % PALETTE.len()];
        let marker = SERIES_MARKERS[index % SERIES_MARKERS.len()];
        // Past the palette, a dotted line keeps repeated colours apart.
        let dash = if dashed {
            Some("7 4")
        } else if index >= PALETTE.len() {
            Some("2 3")
        } else {
            None
        };
        SeriesStyle {
            colour,
            marker,
            dash,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_text_shortens_with_ellipsis() {
        assert_eq!(fit_text("short", 12.0, 200.0), "short");
        let long = "a very long legend label that will not fit";
        let fitted = fit_text(long, 12.0, 100.0);
        assert!(fitted.ends_with('\u{2026}'));
        assert!(text_width(&fitted, 12.0) <= 100.0 + 12.0);
        assert_eq!(fit_text("", 12.0, 0.0), "");
    }

    #[test]
    fn wrap_text_keeps_every_word_and_fits() {
        let text = "ipoib-offload fig2: IPoIB latency: LRO/LSO combinations and connected mode";
        let lines = wrap_text(text, 15.0, 300.0);
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines.iter().all(|l| text_width(l, 15.0) <= 300.0), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(wrap_text("", 12.0, 100.0), vec![String::new()]);
        assert_eq!(wrap_text("short", 12.0, 100.0), vec!["short".to_string()]);
        let long = wrap_text("a Supercalifragilisticexpialidocious b", 12.0, 60.0);
        assert!(long.iter().all(|l| text_width(l, 12.0) <= 60.0), "{long:?}");
    }

    #[test]
    fn styles_differ() {
        let a = SeriesStyle::of(0, false);
        let b = SeriesStyle::of(1, false);
        assert_ne!(a.colour, b.colour);
        assert_ne!(a.marker, b.marker);
        assert_eq!(SeriesStyle::of(2, true).dash, Some("7 4"));
        assert!(SeriesStyle::of(7, false).dash.is_some());
    }
}
