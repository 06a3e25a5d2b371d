//! What surrounds a plot: the wrapped title on top, the numbered key of published values
//! under it, and the figure id in the bottom corner. Shared by line and bar charts.

use super::style::{text_width, wrap_text, Marker, FONT, MARK_COLOUR};
use super::svg::TICK_FONT;
use super::{svg_num as n, Figure, Mark};
use crate::text::escape_xml;
use std::fmt::Write;

/// Width of every figure, px.
pub(crate) const WIDTH: f64 = 720.0;
/// Title font size, px.
pub(crate) const TITLE_FONT: f64 = 15.0;
/// Distance between the baselines of wrapped title lines, px.
const TITLE_LINE: f64 = 19.0;
/// Key font size, px.
pub(crate) const KEY_FONT: f64 = 11.5;
/// Distance between the baselines of key lines, px.
const KEY_LINE: f64 = 15.0;
/// Left margin of title and key, px.
const MARGIN: f64 = 16.0;
/// Room for the key's symbol and number, px.
const KEY_SYMBOL: f64 = 34.0;
/// Height of the footer line with the figure id, px.
pub(crate) const FOOTER: f64 = 20.0;

/// Starts the SVG document of `fig`, `height` px tall: the root element, its title and
/// description (the caption) for assistive tools, and the white background.
pub(crate) fn open(out: &mut String, fig: &Figure, height: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="{FONT}" font-size="{TICK_FONT}" role="img" aria-label="{label}">"#,
        label = escape_xml(&fig.title),
    );
    let _ = write!(out, "<title>{}</title>", escape_xml(&fig.title));
    if !fig.caption.is_empty() {
        let _ = write!(out, "<desc>{}</desc>", escape_xml(&fig.caption));
    }
    let _ = write!(out, r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>"##);
}

/// The title broken into lines that fit the figure (never shortened).
pub(crate) fn title_lines(title: &str) -> Vec<String> {
    wrap_text(title, TITLE_FONT, WIDTH - 2.0 * MARGIN)
}

/// Top of the plot area below a title of `lines` lines, px.
pub(crate) fn plot_top(lines: usize) -> f64 {
    50.0 + lines.saturating_sub(1) as f64 * TITLE_LINE
}

/// Writes the title lines.
pub(crate) fn heading(out: &mut String, lines: &[String]) {
    for (i, line) in lines.iter().enumerate() {
        let _ = write!(
            out,
            r##"<text x="{MARGIN}" y="{}" font-size="{TITLE_FONT}" font-weight="600" fill="#111111">{}</text>"##,
            n(28.0 + i as f64 * TITLE_LINE),
            escape_xml(line)
        );
    }
}

/// Writes the figure id at the bottom right of a figure `height` px tall.
pub(crate) fn footer(out: &mut String, id: &str, height: f64) {
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" font-size="11" fill="#777777" text-anchor="end">{}</text>"##,
        n(WIDTH - MARGIN),
        n(height - 7.0),
        escape_xml(id)
    );
}

/// The key of published values under the plot: one entry per mark, numbered as the
/// labels beside the marks, with the mark's full text wrapped to the figure's width.
pub(crate) struct Key {
    /// (number, is a line, wrapped text) per mark.
    entries: Vec<(usize, bool, Vec<String>)>,
    /// Total height, px (0 without marks).
    pub height: f64,
}

impl Key {
    /// A key for `marks`, numbered from 1 in order.
    pub(crate) fn new(marks: &[&Mark]) -> Key {
        let room = WIDTH - 2.0 * MARGIN - KEY_SYMBOL;
        let entries: Vec<(usize, bool, Vec<String>)> = marks
            .iter()
            .enumerate()
            .map(|(i, m)| (i + 1, m.x.is_none(), wrap_text(&m.label, KEY_FONT, room)))
            .collect();
        let lines: usize = entries.iter().map(|e| e.2.len()).sum();
        let height = if entries.is_empty() { 0.0 } else { 8.0 + lines as f64 * KEY_LINE };
        Key { entries, height }
    }

    /// The label drawn beside mark `index` (0-based): its number.
    pub(crate) fn number(index: usize) -> String {
        (index + 1).to_string()
    }

    /// Writes the key with its top at `y`.
    pub(crate) fn svg(&self, out: &mut String, y: f64) {
        if self.entries.is_empty() {
            return;
        }
        let _ = write!(out, r##"<g font-size="{KEY_FONT}" fill="#222222">"##);
        let mut base = y + 8.0 + KEY_FONT * 0.8;
        for (number, line, text) in &self.entries {
            let cy = base - KEY_FONT * 0.35;
            if *line {
                let _ = write!(
                    out,
                    r#"<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="{MARK_COLOUR}" stroke-width="1.4" stroke-dasharray="5 3"/>"#,
                    n(MARGIN),
                    n(cy),
                    n(MARGIN + 14.0)
                );
            } else {
                out.push_str(&Marker::Diamond.svg(MARGIN + 7.0, cy, 4.5, MARK_COLOUR, "#ffffff", 1.0));
            }
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" font-weight="600" fill="{MARK_COLOUR}">{number}</text>"##,
                n(MARGIN + 18.0),
                n(base)
            );
            for (k, t) in text.iter().enumerate() {
                let _ = write!(
                    out,
                    r#"<text x="{}" y="{}">{}</text>"#,
                    n(MARGIN + KEY_SYMBOL),
                    n(base + k as f64 * KEY_LINE),
                    escape_xml(t)
                );
            }
            base += text.len() as f64 * KEY_LINE;
        }
        out.push_str("</g>");
    }
}

/// Width of a mark's number label, px.
pub(crate) fn number_width(index: usize) -> f64 {
    text_width(&Key::number(index), KEY_FONT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_titles_wrap_and_push_the_plot_down() {
        let lines = title_lines("ipoib-offload fig2: IPoIB latency: LRO/LSO combinations and connected mode, with a very long tail of words");
        assert!(lines.len() >= 2);
        assert!(plot_top(lines.len()) > plot_top(1));
        assert!(lines.iter().all(|l| !l.contains('\u{2026}')));
    }

    #[test]
    fn key_numbers_every_mark_and_grows_with_text() {
        let a = Mark { label: "short: 1 us".into(), claim_id: "a".into(), x: Some(1.0), y: 1.0 };
        let b = Mark { label: "a much longer description ".repeat(8), claim_id: "b".into(), x: None, y: 2.0 };
        let key = Key::new(&[&a, &b]);
        assert!(key.height > 8.0 + 2.0 * KEY_LINE, "the long text wraps");
        let mut out = String::new();
        key.svg(&mut out, 0.0);
        assert!(out.contains(">1</text>") && out.contains(">2</text>"));
        assert!(out.contains(">short: 1 us</text>"));
        assert!(out.contains("stroke-dasharray"), "a line mark shows as a dashed line");
        assert_eq!(Key::new(&[]).height, 0.0);
    }
}
