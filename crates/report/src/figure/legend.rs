//! The legend box beside the plot: one row per series, one per kind of published mark.

use super::style::{text_width, wrap_text, Marker, SeriesStyle, MARK_COLOUR};
use super::svg_num as n;
use crate::text::escape_xml;

/// Font size of legend text, px.
pub(crate) const FONT_SIZE: f64 = 12.0;
/// Height of one legend row, px.
const ROW: f64 = 20.0;
/// Height of each further line of a wrapped label, px.
const LINE: f64 = 15.0;
/// Width of the symbol column, px.
const SYMBOL: f64 = 30.0;
/// Inner padding, px.
const PAD: f64 = 10.0;
/// Narrowest and widest legend, px.
const MIN_WIDTH: f64 = 120.0;
const MAX_WIDTH: f64 = 210.0;

/// What a legend row shows.
pub(crate) enum Entry {
    /// A model series: its line style and label.
    Series { style: SeriesStyle, label: String },
    /// Published values drawn as points.
    PublishedPoint,
    /// Published values drawn as reference lines.
    PublishedLine,
}

impl Entry {
    fn label(&self) -> &str {
        match self {
            Entry::Series { label, .. } => label,
            Entry::PublishedPoint => "published",
            Entry::PublishedLine => "published (line)",
        }
    }
}

/// A legend ready to draw.
pub(crate) struct Legend {
    entries: Vec<Entry>,
    /// Each entry's label as wrapped lines.
    lines: Vec<Vec<String>>,
    /// Total width, px.
    pub width: f64,
    /// Total height, px.
    pub height: f64,
}

/// Room for label text in a legend `width` px wide, px.
fn text_room(width: f64) -> f64 {
    width - SYMBOL - 2.0 * PAD - 4.0
}

impl Legend {
    /// Sizes a legend for `entries`; `None` when there is nothing to show.
    pub(crate) fn new(entries: Vec<Entry>) -> Option<Legend> {
        if entries.is_empty() {
            return None;
        }
        let widest = entries
            .iter()
            .map(|e| text_width(e.label(), FONT_SIZE))
            .fold(0.0, f64::max);
        let width = (widest + SYMBOL + 2.0 * PAD + 6.0).clamp(MIN_WIDTH, MAX_WIDTH);
        let lines: Vec<Vec<String>> = entries
            .iter()
            .map(|e| wrap_text(e.label(), FONT_SIZE, text_room(width)))
            .collect();
        let extra: usize = lines.iter().map(|l| l.len() - 1).sum();
        let height = entries.len() as f64 * ROW + extra as f64 * LINE + 2.0 * PAD - 4.0;
        Some(Legend {
            entries,
            lines,
            width,
            height,
        })
    }

    /// SVG of the legend with its top-left corner at (`x`, `y`).
    pub(crate) fn svg(&self, x: f64, y: f64) -> String {
        let mut out = format!(
            r##"<g><rect x="{}" y="{}" width="{}" height="{}" rx="4" fill="#ffffff" stroke="#cccccc"/>"##,
            n(x),
            n(y),
            n(self.width),
            n(self.height)
        );
        let mut cy = y + PAD + 6.0 - ROW;
        for (entry, lines) in self.entries.iter().zip(&self.lines) {
            cy += ROW;
            let (x0, x1, xm) = (
                x + PAD,
                x + PAD + SYMBOL - 6.0,
                x + PAD + (SYMBOL - 6.0) / 2.0,
            );
            match entry {
                Entry::Series { style, .. } => {
                    let dash = style
                        .dash
                        .map(|d| format!(r#" stroke-dasharray="{d}""#))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.2"{dash}/>"#,
                        n(x0),
                        n(cy),
                        n(x1),
                        n(cy),
                        style.colour
                    ));
                    out.push_str(&style.marker.svg(xm, cy, 4.0, style.colour, "#ffffff", 1.0));
                }
                Entry::PublishedPoint => {
                    out.push_str(&Marker::Diamond.svg(xm, cy, 5.0, MARK_COLOUR, "#ffffff", 1.0));
                }
                Entry::PublishedLine => {
                    out.push_str(&format!(
                        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{MARK_COLOUR}" stroke-width="1.4" stroke-dasharray="5 3"/>"#,
                        n(x0),
                        n(cy),
                        n(x1),
                        n(cy)
                    ));
                }
            }
            for (k, line) in lines.iter().enumerate() {
                out.push_str(&format!(
                    r##"<text x="{}" y="{}" fill="#222222">{}</text>"##,
                    n(x + PAD + SYMBOL),
                    n(cy + 0.35 * FONT_SIZE + k as f64 * LINE),
                    escape_xml(line)
                ));
            }
            cy += (lines.len() - 1) as f64 * LINE;
        }
        out.push_str("</g>");
        out
    }
}
