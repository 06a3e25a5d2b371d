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

/// Hands out label positions, first come first served, avoiding boxes already taken.
pub(crate) struct Placer {
    bounds: Rect,
    taken: Vec<Rect>,
}

impl Placer {
    /// Labels must stay within `bounds`.
    pub(crate) fn new(bounds: Rect) -> Placer {
        Placer {
            bounds,
            taken: Vec::new(),
        }
    }

    /// Keeps labels off `rect` (e.g. a marker).
    pub(crate) fn reserve(&mut self, rect: Rect) {
        self.taken.push(rect);
    }

    /// Chooses the first of `candidates` whose box (for a label `width` px wide, font
    /// `size` px) is inside the bounds and free; failing that, the first candidate moved
    /// up or down until free; failing that, the first candidate inside the bounds.
    pub(crate) fn place(&mut self, width: f64, size: f64, candidates: &[Spot]) -> Option<Spot> {
        let first = *candidates.first()?;
        let free = |spot: &Spot, taken: &[Rect]| {
            let b = label_box(spot, width, size);
            b.inside(&self.bounds) && !taken.iter().any(|t| t.overlaps(&b))
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
        let chosen = candidates
            .iter()
            .copied()
            .chain(shifted)
            .find(|s| free(s, &self.taken))
            .or_else(|| {
                candidates
                    .iter()
                    .copied()
                    .find(|s| label_box(s, width, size).inside(&self.bounds))
            })
            .unwrap_or(first);
        self.taken.push(label_box(&chosen, width, size));
        Some(chosen)
    }
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
