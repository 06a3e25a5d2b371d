//! Rendering a [`Figure`] as a standalone, deterministic SVG document.

use super::axis::{Axis, AxisOptions};
use super::frame::{self, Key, KEY_FONT as MARK_FONT, WIDTH};
use super::labels::{Anchor, Placer, Rect, Spot};
use super::legend::{self, Entry, Legend};
use super::style::{fit_text, text_width, Marker, SeriesStyle, MARK_COLOUR};
use super::{svg_num as n, Figure, Mark, Scale};
use crate::text::escape_xml;
use std::fmt::Write;

/// Height of a figure (without its key) whose title is one line and whose legend fits
/// beside the plot, px.
pub(crate) const HEIGHT: f64 = 440.0;
pub(crate) const TICK_FONT: f64 = 12.0;
pub(crate) const AXIS_FONT: f64 = 13.0;
const TICK_LEN: f64 = 5.0;
/// A time axis (us, ms, s) whose positive values span more than this ratio is drawn
/// logarithmic: on a linear axis the small-message region the claims are about is flat.
const LOG_Y_SPAN: f64 = 100.0;
/// Most markers drawn along one series; denser series get a marker every k-th point.
const MAX_MARKERS: usize = 32;

/// Renders `fig` as an SVG document (UTF-8 text, no XML declaration, so it can also be
/// inlined in HTML). About 720 × 440 px: the title on top (wrapped, never cut), the plot
/// with gridlines and ticks, axis titles, the legend to the right of the plot (labels
/// wrapped), published values as numbered diamonds or dashed lines with a key of their
/// full names under the plot, and the figure id in the bottom corner. The picture grows
/// taller as a long title, legend or key needs.
///
/// * When every point of every series has the same x (one message size, say), the
///   figure is drawn as horizontal bars, one per series, with that x in a subtitle.
/// * A linear time axis (unit us, ms or s) whose positive values span more than two
///   decades is drawn logarithmic.
///
/// Never panics: empty series, a single point or equal values give a sensible range;
/// non-finite points (and non-positive ones on log axes) are skipped, leaving a gap.
/// The output depends only on `fig` (coordinates are printed with one decimal).
pub fn render_svg(fig: &Figure) -> String {
    if let Some(x) = single_x(fig) {
        return super::bars::render(fig, x);
    }
    Plot::new(fig).render()
}

/// The one x value shared by every finite point, when there is exactly one and at least
/// two points (a lone point stays a line chart's marker).
fn single_x(fig: &Figure) -> Option<f64> {
    let mut xs = fig.series.iter().flat_map(|s| &s.points).filter(|p| p.0.is_finite() && p.1.is_finite()).map(|p| p.0);
    let first = xs.next()?;
    let mut count = 1;
    for x in xs {
        if x != first {
            return None;
        }
        count += 1;
    }
    (count >= 2 && fig.x_scale.accepts(first)).then_some(first)
}

/// The y scale to draw: the figure's own, or logarithmic for a linear time axis whose
/// positive values span more than [`LOG_Y_SPAN`].
pub(crate) fn readable_y_scale(fig: &Figure) -> Scale {
    let time_axis = ["(us)", "(ms)", "(s)"].iter().any(|u| fig.y_label.trim_end().ends_with(u));
    if fig.y_scale != Scale::Linear || !time_axis {
        return fig.y_scale;
    }
    let ys: Vec<f64> = fig.series.iter().flat_map(|s| &s.points).map(|p| p.1).filter(|y| y.is_finite()).collect();
    if ys.is_empty() || ys.iter().any(|&y| y <= 0.0) {
        return fig.y_scale;
    }
    let (lo, hi) = ys.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &y| (lo.min(y), hi.max(y)));
    if hi / lo > LOG_Y_SPAN {
        Scale::Log10
    } else {
        fig.y_scale
    }
}

/// A point in px.
type Px = (f64, f64);

/// Everything laid out, ready to write.
struct Plot<'a> {
    fig: &'a Figure,
    title: Vec<String>,
    key: Key,
    /// Height of everything above the key, px.
    body_height: f64,
    x: Axis,
    y: Axis,
    legend: Option<Legend>,
    /// Plot area in px.
    area: Rect,
    height: f64,
    /// Points accepted by both scales, per series; `None` marks a gap.
    series: Vec<Vec<Option<(f64, f64)>>>,
    /// Marks the scales can show.
    marks: Vec<&'a Mark>,
}

impl<'a> Plot<'a> {
    fn new(fig: &'a Figure) -> Plot<'a> {
        let y_scale = readable_y_scale(fig);
        let ok = |x: f64, y: f64| fig.x_scale.accepts(x) && y_scale.accepts(y);
        let series: Vec<Vec<Option<(f64, f64)>>> = fig
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .map(|&(x, y)| ok(x, y).then_some((x, y)))
                    .collect()
            })
            .collect();
        let marks: Vec<&Mark> = fig
            .marks
            .iter()
            .filter(|m| match m.x {
                Some(x) => ok(x, m.y),
                None => y_scale.accepts(m.y),
            })
            .collect();

        let mut xs: Vec<f64> = series.iter().flatten().flatten().map(|p| p.0).collect();
        let mut ys: Vec<f64> = series.iter().flatten().flatten().map(|p| p.1).collect();
        xs.extend(marks.iter().filter_map(|m| m.x));
        ys.extend(marks.iter().map(|m| m.y));
        let x_ticks = if fig.x_scale == Scale::Log2 { 12 } else { 8 };
        let x = Axis::new(
            fig.x_scale,
            &xs,
            AxisOptions {
                zero_baseline: false,
                max_ticks: x_ticks,
            },
        );
        let y = Axis::new(
            y_scale,
            &ys,
            AxisOptions {
                zero_baseline: y_scale == Scale::Linear,
                max_ticks: 7,
            },
        );

        let mut entries: Vec<Entry> = fig
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| Entry::Series {
                style: SeriesStyle::of(i, s.dashed),
                label: if s.label.trim().is_empty() {
                    format!("series {}", i + 1)
                } else {
                    s.label.clone()
                },
            })
            .collect();
        if marks.iter().any(|m| m.x.is_some()) {
            entries.push(Entry::PublishedPoint);
        }
        if marks.iter().any(|m| m.x.is_none()) {
            entries.push(Entry::PublishedLine);
        }
        let legend = Legend::new(entries);

        let tick_width = y
            .ticks
            .iter()
            .map(|t| text_width(&t.label, TICK_FONT))
            .fold(0.0, f64::max);
        let y_title_room = if fig.y_label.trim().is_empty() {
            0.0
        } else {
            AXIS_FONT + 12.0
        };
        let left = (14.0 + y_title_room + tick_width + TICK_LEN + 6.0).round();
        let title = frame::title_lines(&fig.title);
        let top = frame::plot_top(title.len());
        let right = match &legend {
            Some(l) => WIDTH - 16.0 - l.width - 18.0,
            None => WIDTH - 24.0,
        };
        let legend_height = legend.as_ref().map_or(0.0, |l| l.height);
        let body_height = (HEIGHT + top - 50.0).max((top + legend_height + 24.0).ceil());
        let bottom = body_height - 60.0;
        let key = Key::new(&marks);
        let height = body_height + key.height + frame::FOOTER;
        Plot {
            fig,
            title,
            key,
            body_height,
            x,
            y,
            legend,
            area: Rect {
                x0: left,
                y0: top,
                x1: right,
                y1: bottom,
            },
            height,
            series,
            marks,
        }
    }

    fn px(&self, x: f64, y: f64) -> Option<Px> {
        let fx = self.x.fraction(x)?;
        let fy = self.y.fraction(y)?;
        let a = &self.area;
        Some((a.x0 + fx * (a.x1 - a.x0), a.y1 - fy * (a.y1 - a.y0)))
    }

    fn px_x(&self, x: f64) -> Option<f64> {
        self.x
            .fraction(x)
            .map(|f| self.area.x0 + f * (self.area.x1 - self.area.x0))
    }

    fn px_y(&self, y: f64) -> Option<f64> {
        self.y
            .fraction(y)
            .map(|f| self.area.y1 - f * (self.area.y1 - self.area.y0))
    }

    fn clip_id(&self) -> String {
        let safe: String = self
            .fig
            .id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("interlab-clip-{safe}")
    }

    fn render(&self) -> String {
        let fig = self.fig;
        let mut out = String::new();
        frame::open(&mut out, fig, self.height);
        let a = self.area;
        let _ = write!(
            out,
            r#"<defs><clipPath id="{}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
            self.clip_id(),
            n(a.x0 - 6.0),
            n(a.y0 - 6.0),
            n(a.x1 - a.x0 + 12.0),
            n(a.y1 - a.y0 + 12.0)
        );
        frame::heading(&mut out, &self.title);
        self.grid(&mut out);
        self.axes(&mut out);
        self.data(&mut out);
        self.published(&mut out);
        if let Some(legend) = &self.legend {
            let _ = write!(
                out,
                r#"<g font-size="{}">{}</g>"#,
                legend::FONT_SIZE,
                legend.svg(self.area.x1 + 18.0, self.area.y0)
            );
        }
        self.key.svg(&mut out, self.body_height);
        frame::footer(&mut out, &fig.id, self.height);
        out.push_str("</svg>\n");
        out
    }

    fn grid(&self, out: &mut String) {
        let a = self.area;
        out.push_str(r##"<g stroke="#f0f0f0" stroke-width="1">"##);
        for &v in &self.x.minor {
            if let Some(x) = self.px_x(v) {
                let _ = write!(
                    out,
                    r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#,
                    n(x),
                    n(a.y0),
                    n(a.y1)
                );
            }
        }
        for &v in &self.y.minor {
            if let Some(y) = self.px_y(v) {
                let _ = write!(
                    out,
                    r#"<line x1="{1}" y1="{0}" x2="{2}" y2="{0}"/>"#,
                    n(y),
                    n(a.x0),
                    n(a.x1)
                );
            }
        }
        out.push_str(r##"</g><g stroke="#dedede" stroke-width="1">"##);
        for t in &self.x.ticks {
            if let Some(x) = self.px_x(t.value) {
                let _ = write!(
                    out,
                    r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#,
                    n(x),
                    n(a.y0),
                    n(a.y1)
                );
            }
        }
        for t in &self.y.ticks {
            if let Some(y) = self.px_y(t.value) {
                let _ = write!(
                    out,
                    r#"<line x1="{1}" y1="{0}" x2="{2}" y2="{0}"/>"#,
                    n(y),
                    n(a.x0),
                    n(a.x1)
                );
            }
        }
        out.push_str("</g>");
    }

    fn axes(&self, out: &mut String) {
        let a = self.area;
        let _ = write!(
            out,
            r##"<g stroke="#444444" stroke-width="1"><line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/><line x1="{0}" y1="{2}" x2="{3}" y2="{2}"/>"##,
            n(a.x0),
            n(a.y0),
            n(a.y1),
            n(a.x1)
        );
        for t in &self.x.ticks {
            if let Some(x) = self.px_x(t.value) {
                let _ = write!(
                    out,
                    r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#,
                    n(x),
                    n(a.y1),
                    n(a.y1 + TICK_LEN)
                );
            }
        }
        for t in &self.y.ticks {
            if let Some(y) = self.px_y(t.value) {
                let _ = write!(
                    out,
                    r#"<line x1="{1}" y1="{0}" x2="{2}" y2="{0}"/>"#,
                    n(y),
                    n(a.x0 - TICK_LEN),
                    n(a.x0)
                );
            }
        }
        out.push_str("</g>");

        // Tick labels; on a crowded x axis only every k-th is labelled.
        out.push_str(r##"<g fill="#333333">"##);
        let every = self.x_label_stride();
        for (i, t) in self.x.ticks.iter().enumerate() {
            if i % every != 0 {
                continue;
            }
            if let Some(x) = self.px_x(t.value) {
                let _ = write!(
                    out,
                    r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                    n(x),
                    n(a.y1 + TICK_LEN + 4.0 + TICK_FONT * 0.8),
                    escape_xml(&t.label)
                );
            }
        }
        for t in &self.y.ticks {
            if let Some(y) = self.px_y(t.value) {
                let _ = write!(
                    out,
                    r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                    n(a.x0 - TICK_LEN - 4.0),
                    n(y + TICK_FONT * 0.35),
                    escape_xml(&t.label)
                );
            }
        }
        out.push_str("</g>");

        let x_title = fit_text(&self.fig.x_label, AXIS_FONT, a.x1 - a.x0);
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" font-size="{AXIS_FONT}" fill="#222222" text-anchor="middle">{}</text>"##,
            n((a.x0 + a.x1) / 2.0),
            n(a.y1 + TICK_LEN + 4.0 + TICK_FONT + 22.0),
            escape_xml(&x_title)
        );
        if !self.fig.y_label.trim().is_empty() {
            let y_title = fit_text(&self.fig.y_label, AXIS_FONT, a.y1 - a.y0);
            let (cx, cy) = (14.0 + AXIS_FONT * 0.8, (a.y0 + a.y1) / 2.0);
            let _ = write!(
                out,
                r##"<text x="{0}" y="{1}" font-size="{AXIS_FONT}" fill="#222222" text-anchor="middle" transform="rotate(-90 {0} {1})">{2}</text>"##,
                n(cx),
                n(cy),
                escape_xml(&y_title)
            );
        }
    }

    /// Label every k-th x tick so that labels keep at least 6 px apart.
    fn x_label_stride(&self) -> usize {
        let count = self.x.ticks.len();
        if count < 2 {
            return 1;
        }
        let spacing = (self.area.x1 - self.area.x0) / (count - 1) as f64;
        let widest = self
            .x
            .ticks
            .iter()
            .map(|t| text_width(&t.label, TICK_FONT))
            .fold(0.0, f64::max);
        ((widest + 6.0) / spacing).ceil().clamp(1.0, count as f64) as usize
    }

    fn data(&self, out: &mut String) {
        let _ = write!(out, r#"<g clip-path="url(#{})">"#, self.clip_id());
        for (i, (series, points)) in self.fig.series.iter().zip(&self.series).enumerate() {
            let style = SeriesStyle::of(i, series.dashed);
            let dash = style
                .dash
                .map(|d| format!(r#" stroke-dasharray="{d}""#))
                .unwrap_or_default();
            let px: Vec<Option<Px>> = points
                .iter()
                .map(|p| p.and_then(|(x, y)| self.px(x, y)))
                .collect();
            for run in px.split(|p| p.is_none()) {
                if run.len() < 2 {
                    continue;
                }
                let coords: Vec<String> = run
                    .iter()
                    .flatten()
                    .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
                    .collect();
                let _ = write!(
                    out,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2.2" stroke-linejoin="round" stroke-linecap="round"{dash}/>"#,
                    coords.join(" "),
                    style.colour
                );
            }
            let valid: Vec<Px> = px.iter().flatten().copied().collect();
            let every = valid.len().div_ceil(MAX_MARKERS).max(1);
            for (x, y) in valid.iter().step_by(every) {
                out.push_str(&style.marker.svg(*x, *y, 3.6, style.colour, "#ffffff", 0.9));
            }
        }
        out.push_str("</g>");
        if self.series.iter().flatten().all(Option::is_none) && self.marks.is_empty() {
            let a = self.area;
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" fill="#999999" font-size="14" text-anchor="middle">no data</text>"##,
                n((a.x0 + a.x1) / 2.0),
                n((a.y0 + a.y1) / 2.0)
            );
        }
    }

    fn published(&self, out: &mut String) {
        if self.marks.is_empty() {
            return;
        }
        let a = self.area;
        let mut placer = Placer::new(Rect {
            x0: a.x0 + 2.0,
            y0: a.y0 - 12.0,
            x1: a.x1 - 2.0,
            y1: a.y1 - 2.0,
        });
        for points in &self.series {
            let px: Vec<Option<Px>> = points
                .iter()
                .map(|p| p.and_then(|(x, y)| self.px(x, y)))
                .collect();
            for run in px.split(|p| p.is_none()) {
                let run: Vec<Px> = run.iter().flatten().copied().collect();
                for pair in run.windows(2) {
                    placer.avoid_line(pair[0], pair[1]);
                }
                if let [single] = run[..] {
                    placer.avoid_line(single, single);
                }
            }
        }
        let mut labels: Vec<(Spot, String)> = Vec::new();
        let _ = write!(out, r#"<g clip-path="url(#{})">"#, self.clip_id());
        for m in self.marks.iter().filter(|m| m.x.is_none()) {
            if let Some(y) = self.px_y(m.y) {
                let _ = write!(
                    out,
                    r#"<line x1="{}" y1="{2}" x2="{}" y2="{2}" stroke="{MARK_COLOUR}" stroke-width="1.4" stroke-dasharray="5 3"/>"#,
                    n(a.x0),
                    n(a.x1),
                    n(y)
                );
            }
        }
        let points: Vec<(usize, Px)> = self
            .marks
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.x.and_then(|x| self.px(x, m.y)).map(|p| (i, p)))
            .collect();
        for (_, (x, y)) in &points {
            out.push_str(&Marker::Diamond.svg(*x, *y, 5.5, MARK_COLOUR, "#ffffff", 1.2));
            placer.reserve(Rect {
                x0: x - 6.0,
                y0: y - 7.5,
                x1: x + 6.0,
                y1: y + 7.5,
            });
        }
        out.push_str("</g>");

        for (i, m) in self.marks.iter().enumerate().filter(|(_, m)| m.x.is_none()) {
            let Some(y) = self.px_y(m.y) else { continue };
            let text = Key::number(i);
            let w = frame::number_width(i);
            let (above, below) = (y - 5.0, y + MARK_FONT + 3.0);
            let mid = (a.x0 + a.x1) / 2.0;
            let spots = [
                Spot::new(a.x1 - 6.0, above, Anchor::End),
                Spot::new(a.x0 + 6.0, above, Anchor::Start),
                Spot::new(a.x1 - 6.0, below, Anchor::End),
                Spot::new(a.x0 + 6.0, below, Anchor::Start),
                Spot::new(mid, above, Anchor::Middle),
                Spot::new(mid, below, Anchor::Middle),
            ];
            if let Some(spot) = placer.place(w, MARK_FONT, &spots) {
                labels.push((spot, text));
            }
        }
        for &(i, (x, y)) in &points {
            let text = Key::number(i);
            let w = frame::number_width(i);
            let spots = [
                Spot::new(x + 8.0, y - 6.0, Anchor::Start),
                Spot::new(x - 8.0, y - 6.0, Anchor::End),
                Spot::new(x + 8.0, y + MARK_FONT + 2.0, Anchor::Start),
                Spot::new(x - 8.0, y + MARK_FONT + 2.0, Anchor::End),
                Spot::new(x, y - 11.0, Anchor::Middle),
                Spot::new(x, y + MARK_FONT + 9.0, Anchor::Middle),
                Spot::new(x + 16.0, y - 14.0, Anchor::Start),
                Spot::new(x - 16.0, y - 14.0, Anchor::End),
            ];
            if let Some(spot) = placer.place(w, MARK_FONT, &spots) {
                labels.push((spot, text));
            }
        }
        let _ = write!(
            out,
            r##"<g font-size="{MARK_FONT}" font-weight="600" fill="{MARK_COLOUR}" stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">"##
        );
        for (spot, text) in labels {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="{}">{}</text>"#,
                n(spot.x),
                n(spot.y),
                spot.anchor.as_svg(),
                escape_xml(&text)
            );
        }
        out.push_str("</g>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{check_markup, sample_figure};
    use crate::{Mark, Series};

    fn well_formed(svg: &str) {
        if let Err(e) = check_markup(svg, &[]) {
            panic!("malformed SVG: {e}\n{svg}");
        }
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(
            !svg.contains("NaN") && !svg.contains("inf"),
            "no non-finite coordinates"
        );
    }

    fn empty(id: &str) -> Figure {
        Figure {
            id: id.into(),
            title: "Empty".into(),
            ..Figure::default()
        }
    }

    #[test]
    fn full_figure_has_title_labels_ticks_legend_and_marks() {
        let svg = render_svg(&sample_figure("pcie-fig6", "pcie"));
        well_formed(&svg);
        assert!(svg.contains("Uni-directional RDMA write bandwidth &lt;window 64&gt; &amp; more"));
        assert!(svg.contains(">Message size (bytes)</text>"));
        assert!(svg.contains(">Bandwidth (MB/s)</text>"));
        for tick in [
            "1", "4", "16", "64", "256", "1K", "4K", "16K", "64K", "256K", "1M", "4M",
        ] {
            assert!(svg.contains(&format!(">{tick}</text>")), "tick {tick}");
        }
        assert!(
            svg.contains(">0</text>") && svg.contains(">1000</text>"),
            "y starts at 0"
        );
        assert!(
            svg.contains(">PCIe</text>") && svg.contains(">PCI-X</text>"),
            "legend"
        );
        assert!(svg.contains(">published</text>") && svg.contains(">published (line)</text>"));
        assert!(svg.contains(">paper: 968</text>") && svg.contains(">paper: 778</text>"));
        assert!(svg.contains("stroke-dasharray=\"7 4\""), "dashed series");
        assert!(svg.contains("clip-path=\"url(#interlab-clip-pcie-fig6)\""));
        assert!(svg.contains("<desc>Model vs paper; &quot;dashed&quot; = PCI-X.</desc>"));
    }

    #[test]
    fn deterministic() {
        let f = sample_figure("a", "b");
        assert_eq!(render_svg(&f), render_svg(&f));
    }

    #[test]
    fn empty_figure() {
        let svg = render_svg(&empty("e"));
        well_formed(&svg);
        assert!(svg.contains(">no data</text>"));
        let mut f = empty("e2");
        f.series.push(Series {
            label: String::new(),
            points: vec![],
            dashed: false,
        });
        let svg = render_svg(&f);
        well_formed(&svg);
        assert!(
            svg.contains(">series 1</text>"),
            "unlabelled series gets a legend name"
        );
    }

    #[test]
    fn single_point_and_all_equal() {
        let mut f = empty("one");
        f.series.push(Series {
            label: "x".into(),
            points: vec![(3.0, 5.0)],
            dashed: false,
        });
        let svg = render_svg(&f);
        well_formed(&svg);
        assert!(
            svg.contains("<circle"),
            "a lone point is still drawn as a marker"
        );
        let mut f = empty("flat");
        f.series.push(Series {
            label: "x".into(),
            points: (0..5).map(|i| (i as f64, 7.0)).collect(),
            dashed: false,
        });
        well_formed(&render_svg(&f));
        let mut f = empty("zero");
        f.series.push(Series {
            label: "x".into(),
            points: vec![(1.0, 0.0), (1.0, 0.0)],
            dashed: false,
        });
        well_formed(&render_svg(&f));
    }

    #[test]
    fn non_finite_points_are_skipped() {
        let mut f = empty("nan");
        f.series.push(Series {
            label: "gappy".into(),
            points: vec![
                (1.0, 1.0),
                (2.0, f64::NAN),
                (3.0, 3.0),
                (4.0, 4.0),
                (f64::INFINITY, 2.0),
                (6.0, f64::NEG_INFINITY),
            ],
            dashed: false,
        });
        f.marks.push(Mark {
            label: "bad".into(),
            claim_id: "c".into(),
            x: Some(f64::NAN),
            y: 1.0,
        });
        f.marks.push(Mark {
            label: "bad2".into(),
            claim_id: "c".into(),
            x: None,
            y: f64::INFINITY,
        });
        let svg = render_svg(&f);
        well_formed(&svg);
        assert_eq!(
            svg.matches("<polyline").count(),
            1,
            "only the (3,3)-(4,4) run is a line"
        );
        assert!(!svg.contains(">bad</text>") && !svg.contains(">bad2</text>"));
    }

    #[test]
    fn log_axes_skip_non_positive_values() {
        let mut f = empty("log");
        f.x_scale = Scale::Log2;
        f.y_scale = Scale::Log10;
        f.series.push(Series {
            label: "lat".into(),
            points: vec![
                (0.0, 1.0),
                (1.0, 2.0),
                (64.0, 30.0),
                (65536.0, 900.0),
                (131072.0, -1.0),
            ],
            dashed: false,
        });
        let svg = render_svg(&f);
        well_formed(&svg);
        assert!(svg.contains(">64K</text>") && svg.contains(">1000</text>"));
        let mut f = empty("log-empty");
        f.x_scale = Scale::Log10;
        f.y_scale = Scale::Log2;
        f.series.push(Series {
            label: "neg".into(),
            points: vec![(-1.0, -1.0)],
            dashed: false,
        });
        well_formed(&render_svg(&f));
    }

    #[test]
    fn negative_linear_data_and_many_series() {
        let mut f = empty("neg");
        for i in 0..20 {
            f.series.push(Series {
                label: format!("series with a rather long label number {i}"),
                points: (0..100)
                    .map(|k| (k as f64, (k as f64 - 50.0) * (i as f64 + 1.0)))
                    .collect(),
                dashed: i % 2 == 1,
            });
        }
        let svg = render_svg(&f);
        well_formed(&svg);
        assert!(
            svg.contains(">-500</text>") || svg.contains(">-600</text>"),
            "axis goes below 0"
        );
        assert!(!svg.contains('\u{2026}'), "long legend labels wrap, never cut");
        assert!(svg.contains(">series with a rather long</text>") || svg.contains(">series with a rather long label</text>"), "wrapped");
        let height: f64 = svg
            .split("height=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(height > HEIGHT, "a long legend makes the figure taller");
    }

    #[test]
    fn time_axes_spanning_more_than_two_decades_turn_logarithmic() {
        let mut f = empty("lat");
        f.y_label = "Latency (us)".into();
        f.series.push(Series {
            label: "ipoib".into(),
            points: vec![(1.0, 20.0), (2.0, 25.0), (3.0, 3400.0)],
            dashed: false,
        });
        assert_eq!(readable_y_scale(&f), Scale::Log10);
        f.series[0].points[2].1 = 1900.0;
        assert_eq!(readable_y_scale(&f), Scale::Linear, "under 100x stays linear");
        f.series[0].points[2].1 = 3400.0;
        f.y_label = "Bandwidth (MB/s)".into();
        assert_eq!(readable_y_scale(&f), Scale::Linear, "only time axes");
        f.y_label = "Latency (us)".into();
        f.series[0].points.push((4.0, 0.0));
        assert_eq!(readable_y_scale(&f), Scale::Linear, "a zero cannot go on a log axis");
    }

    #[test]
    fn hostile_text_is_escaped() {
        let mut f = sample_figure("x", "y");
        f.title = "<script>alert('x')</script>".into();
        f.series[0].label = "a&b\u{1}".into();
        f.marks[0].label = "\"quoted\" <mark>".into();
        let svg = render_svg(&f);
        well_formed(&svg);
        assert!(!svg.contains("<script>"));
    }

    #[test]
    fn mark_labels_do_not_overlap() {
        let mut f = empty("crowded");
        f.series.push(Series {
            label: "m".into(),
            points: vec![(1.0, 10.0), (8.0, 10.0)],
            dashed: false,
        });
        for i in 0..3 {
            f.marks.push(Mark {
                label: format!("paper {i}"),
                claim_id: "c".into(),
                x: Some(4.0),
                y: 10.0,
            });
        }
        let svg = render_svg(&f);
        well_formed(&svg);
        let mut spots: Vec<String> = svg
            .split("<text ")
            .filter(|t| t.contains(">paper "))
            .map(|t| t.split('>').next().unwrap().to_string())
            .collect();
        spots.sort();
        spots.dedup();
        assert_eq!(spots.len(), 3, "{spots:?}");
    }
}
