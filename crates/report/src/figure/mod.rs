//! Figures: what a plot shows ([`Figure`]) and its rendering as a standalone SVG.

mod axis;
mod bars;
mod frame;
mod labels;
mod legend;
mod style;
mod svg;

pub use svg::render_svg;

/// One model (or measured) curve.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend text, e.g. `PCIe, RDMA write`.
    pub label: String,
    /// Points `(x, y)` in the figure's axis units, drawn in the given order. Non-finite
    /// points (and non-positive ones on log axes) are skipped, leaving a gap in the line.
    pub points: Vec<(f64, f64)>,
    /// Draw the line dashed (e.g. for a variant or a second port).
    pub dashed: bool,
}

/// A published value drawn over the model: a black diamond at (`x`, `y`), or, when `x`
/// is `None`, a dashed horizontal reference line at `y` across the plot. Both are labelled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mark {
    /// Text shown beside the mark, e.g. `paper: 968 MB/s`.
    pub label: String,
    /// Id of the claim the mark stands for (from `claims.csv`).
    pub claim_id: String,
    /// x position in axis units, or `None` for a horizontal reference line.
    pub x: Option<f64>,
    /// y position in axis units.
    pub y: f64,
}

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values; ticks at 1-2-5 steps.
    #[default]
    Linear,
    /// Powers of two evenly spaced; ticks labelled as sizes (1, 4, 16, ... 1K, 4K, ...
    /// 1M; K = 2^10, M = 2^20). For message sizes in bytes.
    Log2,
    /// Powers of ten evenly spaced.
    Log10,
}

/// A plot: model series, published marks, axis titles and a caption.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figure {
    /// File stem and anchor, `<study>-<figure>`, e.g. `pcie-fig6`; the `<figure>` part
    /// matches column `figure` of `claims.csv`. Letters, digits, `-`, `_`, `.` only.
    pub id: String,
    /// Study id, e.g. `pcie` (column `paper` of `claims.csv`).
    pub study: String,
    /// Title shown above the plot.
    pub title: String,
    /// x-axis title with its unit, e.g. `Message size (bytes)`.
    pub x_label: String,
    /// y-axis title with its unit, e.g. `Bandwidth (MB/s)`.
    pub y_label: String,
    /// Scale of the x axis.
    pub x_scale: Scale,
    /// Scale of the y axis; a linear y axis always includes 0.
    pub y_scale: Scale,
    /// Model curves, in legend order.
    pub series: Vec<Series>,
    /// Published values.
    pub marks: Vec<Mark>,
    /// Caption shown under the figure in the report (and kept as the SVG description).
    pub caption: String,
}

/// Formats a pixel coordinate with one decimal (deterministic, no `-0.0`).
pub(crate) fn svg_num(x: f64) -> String {
    let s = format!("{x:.1}");
    if s == "-0.0" {
        "0.0".to_string()
    } else {
        s
    }
}
