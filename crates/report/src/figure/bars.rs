//! A figure whose series all sit at one x value (one message size, say) drawn as
//! horizontal bars, one per series: points stacked on one x would hide each other.

use super::axis::{Axis, AxisOptions};
use super::frame::{self, Key, WIDTH};
use super::style::{text_width, wrap_text, Marker, SeriesStyle, MARK_COLOUR};
use super::svg::{readable_y_scale, AXIS_FONT, TICK_FONT};
use super::{svg_num as n, Figure, Mark, Scale};
use crate::text::{escape_xml, format_sig};
use std::fmt::Write;

/// Height of one bar's row, px.
const ROW: f64 = 30.0;
/// Thickness of a bar, px.
const BAR: f64 = 16.0;
/// Widest label column, px.
const MAX_LABEL: f64 = 250.0;

/// Renders `fig`, whose finite points all have x = `x`, as bars (see [`super::render_svg`]).
pub(crate) fn render(fig: &Figure, x: f64) -> String {
    let scale = readable_y_scale(fig);
    // Each series' value at x (its last finite one); a series without one gets no bar.
    let values: Vec<Option<f64>> = fig
        .series
        .iter()
        .map(|s| s.points.iter().rev().find(|p| p.0 == x && scale.accepts(p.1)).map(|p| p.1))
        .collect();
    let marks: Vec<&Mark> = fig.marks.iter().filter(|m| scale.accepts(m.y)).collect();
    let mut all: Vec<f64> = values.iter().flatten().copied().collect();
    all.extend(marks.iter().map(|m| m.y));
    let axis = Axis::new(scale, &all, AxisOptions { zero_baseline: scale == Scale::Linear, max_ticks: 7 });

    let labels: Vec<Vec<String>> = fig
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let label = if s.label.trim().is_empty() { format!("series {}", i + 1) } else { s.label.clone() };
            let mut lines = wrap_text(&label, TICK_FONT, MAX_LABEL);
            lines.truncate(2);
            lines
        })
        .collect();
    let label_w = labels.iter().flatten().map(|l| text_width(l, TICK_FONT)).fold(40.0, f64::max).min(MAX_LABEL);
    let title = frame::title_lines(&fig.title);
    let top = frame::plot_top(title.len());
    let (x0, x1) = (16.0 + label_w + 10.0, WIDTH - 70.0);
    let bars_top = top + 22.0;
    let bars_bottom = bars_top + ROW * fig.series.len().max(1) as f64;
    let body_height = bars_bottom + 56.0;
    let key = Key::new(&marks);
    let height = body_height + key.height + frame::FOOTER;
    let px = |v: f64| axis.fraction(v).map(|f| x0 + f * (x1 - x0));

    let mut out = String::new();
    frame::open(&mut out, fig, height);
    frame::heading(&mut out, &title);
    if !fig.x_label.trim().is_empty() {
        let _ = write!(
            out,
            r##"<text x="16" y="{}" font-size="{TICK_FONT}" fill="#555555">at {} = {}</text>"##,
            n(top + 4.0),
            escape_xml(fig.x_label.trim()),
            escape_xml(&format_sig(x, 6))
        );
    }

    // Gridlines, ticks and the value axis under the bars.
    out.push_str(r##"<g stroke="#dedede" stroke-width="1">"##);
    for t in &axis.ticks {
        if let Some(p) = px(t.value) {
            let _ = write!(out, r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#, n(p), n(bars_top - 4.0), n(bars_bottom));
        }
    }
    let _ = write!(
        out,
        r##"</g><line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#444444" stroke-width="1"/><g fill="#333333">"##,
        n(x0),
        n(bars_bottom),
        n(x1)
    );
    for t in &axis.ticks {
        if let Some(p) = px(t.value) {
            let _ = write!(out, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, n(p), n(bars_bottom + 18.0), escape_xml(&t.label));
        }
    }
    let _ = write!(
        out,
        r##"</g><text x="{}" y="{}" font-size="{AXIS_FONT}" fill="#222222" text-anchor="middle">{}</text>"##,
        n((x0 + x1) / 2.0),
        n(bars_bottom + 42.0),
        escape_xml(&fig.y_label)
    );

    // One bar per series, its value at its end, its label at the left.
    let base = px(if scale == Scale::Linear { 0.0 } else { axis.ticks.first().map_or(1.0, |t| t.value) }).unwrap_or(x0).max(x0);
    for (i, (value, lines)) in values.iter().zip(&labels).enumerate() {
        let cy = bars_top + ROW * (i as f64 + 0.5);
        let colour = SeriesStyle::of(i, false).colour;
        for (k, line) in lines.iter().enumerate() {
            let dy = (k as f64 - (lines.len() - 1) as f64 / 2.0) * 13.0 + TICK_FONT * 0.35;
            let _ = write!(out, r##"<text x="{}" y="{}" fill="#222222" text-anchor="end">{}</text>"##, n(x0 - 8.0), n(cy + dy), escape_xml(line));
        }
        let Some(v) = *value else {
            let _ = write!(out, r##"<text x="{}" y="{}" fill="#999999">no value</text>"##, n(x0 + 6.0), n(cy + TICK_FONT * 0.35));
            continue;
        };
        let Some(end) = px(v) else { continue };
        let (a, b) = if end >= base { (base, end) } else { (end, base) };
        let _ = write!(
            out,
            r#"<rect x="{}" y="{}" width="{}" height="{BAR}" fill="{colour}"/>"#,
            n(a),
            n(cy - BAR / 2.0),
            n((b - a).max(1.0))
        );
        let _ = write!(out, r##"<text x="{}" y="{}" fill="#222222">{}</text>"##, n(b + 5.0), n(cy + TICK_FONT * 0.35), escape_xml(&format_sig(v, 4)));
    }

    // Published values: a numbered dashed line (or a diamond on its bar's row) each.
    for (i, m) in marks.iter().enumerate() {
        let Some(p) = px(m.y) else { continue };
        let _ = write!(
            out,
            r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="{MARK_COLOUR}" stroke-width="1.4" stroke-dasharray="5 3"/>"#,
            n(p),
            n(bars_top - 6.0),
            n(bars_bottom)
        );
        if m.x.is_some() {
            out.push_str(&Marker::Diamond.svg(p, bars_top - 6.0, 4.5, MARK_COLOUR, "#ffffff", 1.0));
        }
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" font-size="{}" font-weight="600" fill="{MARK_COLOUR}">{}</text>"##,
            n(p + 6.0 + 12.0 * (i % 2) as f64),
            n(bars_top - 8.0),
            frame::KEY_FONT,
            Key::number(i)
        );
    }
    key.svg(&mut out, body_height);
    frame::footer(&mut out, &fig.id, height);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use crate::figure::render_svg;
    use crate::test_support::check_markup;
    use crate::{Figure, Mark, Scale, Series};

    fn one_size() -> Figure {
        Figure {
            id: "pcie-fig5".into(),
            study: "pcie".into(),
            title: "Atomic operation latency (8 B)".into(),
            x_label: "Message size (bytes)".into(),
            y_label: "Latency (us)".into(),
            x_scale: Scale::Log2,
            y_scale: Scale::Linear,
            series: ["Fetch-and-add PCIe", "Compare-and-swap PCIe", "RDMA read PCIe"]
                .iter()
                .enumerate()
                .map(|(i, l)| Series { label: l.to_string(), points: vec![(8.0, 9.0 + i as f64)], dashed: false })
                .collect(),
            marks: vec![Mark { label: "RDMA read latency on PCIe: 9.4 us".into(), claim_id: "c".into(), x: Some(8.0), y: 9.4 }],
            caption: String::new(),
        }
    }

    #[test]
    fn one_x_value_gives_a_bar_per_series_with_values_and_labels() {
        let svg = render_svg(&one_size());
        check_markup(&svg, &[]).unwrap();
        assert_eq!(svg.matches("<rect").count(), 1 + 3, "background and three bars");
        for label in ["Fetch-and-add PCIe", "Compare-and-swap PCIe", "RDMA read PCIe", ">9</text>", ">10</text>", ">11</text>"] {
            assert!(svg.contains(label), "{label}");
        }
        assert!(svg.contains("at Message size (bytes) = 8"));
        assert!(svg.contains(">RDMA read latency on PCIe: 9.4 us</text>"), "the key names the published value");
        assert!(!svg.contains("<polyline"), "no lines");
    }

    #[test]
    fn two_x_values_stay_a_line_chart() {
        let mut f = one_size();
        f.series[0].points.push((16.0, 12.0));
        assert!(render_svg(&f).contains("<polyline"));
    }
}
