//! Placing text labels in a plot so that they do not overlap each other.

/// An axis-aligned box in px.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// Horizontal anchoring of a text label (SVG `text-anchor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    pub(crate) fn as_svg(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A label position: anchor point `x`, baseline `y`, anchoring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spot {
    pub x: f64,
    pub y: f64,
    pub anchor: Anchor,
}

impl Spot {
    pub(crate) fn new(x: f64, y: f64, anchor: Anchor) -> Spot {
        Spot { x, y, anchor }
    }
}

/// Hands out label positions, first come first served, avoiding boxes already taken
/// and, where possible, the plotted lines.
pub(crate) struct Placer {
    bounds: Rect,
    taken: Vec<Rect>,
    lines: Vec<((f64, f64), (f64, f64))>,
}

impl Placer {
    /// Labels must stay within `bounds`.
    pub(crate) fn new(bounds: Rect) -> Placer {
        Placer {
            bounds,
            taken: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Keeps labels off the segment from `a` to `b` when there is a free alternative.
    pub(crate) fn avoid_line(&mut self, a: (f64, f64), b: (f64, f64)) {
        self.lines.push((a, b));
    }

    /// Keeps labels off `rect` (e.g. a marker).
    pub(crate) fn reserve(&mut self, rect: Rect) {
        self.taken.push(rect);
    }

    /// Chooses, in order of preference, the first of `candidates` whose box (for a label
    /// `width` px wide, font `size` px) is inside the bounds and clear of other labels and
    /// of lines; else the first candidate, or the first one moved up or down, clear of
    /// other labels; else the first candidate inside the bounds; else the first.
    pub(crate) fn place(&mut self, width: f64, size: f64, candidates: &[Spot]) -> Option<Spot> {
        let first = *candidates.first()?;
        let inside = |b: &Rect| b.inside(&self.bounds);
        let no_labels = |b: &Rect| !self.taken.iter().any(|t| t.overlaps(b));
        let no_lines = |b: &Rect| {
            let padded = Rect {
                x0: b.x0 - 2.0,
                y0: b.y0 - 2.0,
                x1: b.x1 + 2.0,
                y1: b.y1 + 2.0,
            };
            !self
                .lines
                .iter()
                .any(|(p, q)| segment_hits(*p, *q, &padded))
        };
        let shifted = (1..=8).flat_map(|k| {
            let dy = k as f64 * (size + 2.0);
            [
                Spot {
                    y: first.y + dy,
                    ..first
                },
                Spot {
                    y: first.y - dy,
                    ..first
                },
            ]
        });
        let boxed = |s: &Spot| label_box(s, width, size);
        let chosen = candidates
            .iter()
            .copied()
            .find(|s| {
                let b = boxed(s);
                inside(&b) && no_labels(&b) && no_lines(&b)
            })
            .or_else(|| {
                candidates.iter().copied().chain(shifted).find(|s| {
                    let b = boxed(s);
                    inside(&b) && no_labels(&b)
                })
            })
            .or_else(|| candidates.iter().copied().find(|s| inside(&boxed(s))))
            .unwrap_or(first);
        self.taken.push(boxed(&chosen));
        Some(chosen)
    }
}

/// True when the segment from `p` to `q` touches `r` (Liang-Barsky clipping).
fn segment_hits(p: (f64, f64), q: (f64, f64), r: &Rect) -> bool {
    let (dx, dy) = (q.0 - p.0, q.1 - p.1);
    let mut t0 = 0.0f64;
    let mut t1 = 1.0f64;
    for (num, den) in [
        (p.0 - r.x0, -dx),
        (r.x1 - p.0, dx),
        (p.1 - r.y0, -dy),
        (r.y1 - p.1, dy),
    ] {
        if den == 0.0 {
            if num < 0.0 {
                return false;
            }
        } else {
            let t = num / den;
            if den < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// The box a label of `width` px at font `size` px occupies at `spot`.
fn label_box(spot: &Spot, width: f64, size: f64) -> Rect {
    let x0 = match spot.anchor {
        Anchor::Start => spot.x,
        Anchor::Middle => spot.x - width / 2.0,
        Anchor::End => spot.x - width,
    };
    Rect {
        x0: x0 - 2.0,
        y0: spot.y - 0.8 * size - 1.0,
        x1: x0 + width + 2.0,
        y1: spot.y + 0.25 * size + 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_label_avoids_the_first() {
        let mut p = Placer::new(Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 400.0,
            y1: 300.0,
        });
        let spot = Spot {
            x: 100.0,
            y: 100.0,
            anchor: Anchor::Start,
        };
        let a = p.place(80.0, 11.0, &[spot]).unwrap();
        let b = p.place(80.0, 11.0, &[spot]).unwrap();
        assert_eq!(a, spot);
        assert_ne!(b, spot);
        assert!((b.y - a.y).abs() >= 11.0);
    }

    #[test]
    fn prefers_spots_clear_of_lines() {
        let mut p = Placer::new(Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 400.0,
            y1: 300.0,
        });
        p.avoid_line((0.0, 100.0), (400.0, 100.0));
        let on_line = Spot {
            x: 50.0,
            y: 104.0,
            anchor: Anchor::Start,
        };
        let above = Spot {
            x: 50.0,
            y: 80.0,
            anchor: Anchor::Start,
        };
        assert_eq!(p.place(60.0, 11.0, &[on_line, above]), Some(above));
        // With no clear spot, a line is crossed rather than dropping the label.
        assert_eq!(p.place(60.0, 11.0, &[on_line]), Some(on_line));
    }

    #[test]
    fn segment_rect_intersection() {
        let r = Rect {
            x0: 10.0,
            y0: 10.0,
            x1: 20.0,
            y1: 20.0,
        };
        assert!(segment_hits((0.0, 15.0), (30.0, 15.0), &r));
        assert!(
            segment_hits((15.0, 15.0), (15.0, 15.0), &r),
            "a point inside"
        );
        assert!(
            segment_hits((0.0, 0.0), (30.0, 30.0), &r),
            "diagonal through"
        );
        assert!(!segment_hits((0.0, 0.0), (30.0, 0.0), &r));
        assert!(!segment_hits((0.0, 25.0), (25.0, 50.0), &r));
    }

    #[test]
    fn stays_inside_bounds_when_possible() {
        let mut p = Placer::new(Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 200.0,
            y1: 100.0,
        });
        let right = Spot {
            x: 190.0,
            y: 50.0,
            anchor: Anchor::Start,
        };
        let left = Spot {
            x: 180.0,
            y: 50.0,
            anchor: Anchor::End,
        };
        assert_eq!(p.place(60.0, 11.0, &[right, left]), Some(left));
        assert_eq!(p.place(60.0, 11.0, &[]), None);
    }
}
