//! Reading the text output of the tools users already run: perftest (`ib_write_lat`,
//! `ib_send_lat`, `ib_read_lat`, `ib_write_bw`, `ib_send_bw`, `ib_read_bw`, with or without
//! `--report_gbits`) and the OSU micro-benchmarks (`osu_latency`, `osu_bw`, `osu_bibw`).
//!
//! Units, as the tools print them (docs/references.md [P1], [P3], [O1]):
//! * perftest latency columns are microseconds of one-way latency (half the round trip for
//!   the ping-pong tests, `t_typical` the median); bandwidth `MB/sec` is 2^20 bytes per
//!   second (`print_report_bw`: `... / 0x100000`), `Gb/sec` is 10^9 bits per second;
//! * OSU latency is one-way microseconds; OSU bandwidth `MB/s` is 10^6 bytes per second
//!   (`size / 1e6 * loop / t`).
//!
//! Every value is converted to the model's units: microseconds and MB/s = 10^6 bytes/s.
//! Errors name the file and the line; every number is bounded.

use std::fmt;

/// Which tool wrote a file, and what it measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// perftest latency of `op` (`send`, `rdma_write`, `rdma_read`).
    PerftestLat { op: &'static str },
    /// perftest bandwidth of `op`; `bidirectional` with `-b`.
    PerftestBw { op: &'static str, bidirectional: bool },
    /// `osu_latency`.
    OsuLatency,
    /// `osu_bw`.
    OsuBw,
    /// `osu_bibw`.
    OsuBibw,
}

impl Tool {
    /// The tool's name as users know it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::PerftestLat { op: "send" } => "ib_send_lat",
            Tool::PerftestLat { op: "rdma_read" } => "ib_read_lat",
            Tool::PerftestLat { .. } => "ib_write_lat",
            Tool::PerftestBw { op: "send", .. } => "ib_send_bw",
            Tool::PerftestBw { op: "rdma_read", .. } => "ib_read_bw",
            Tool::PerftestBw { .. } => "ib_write_bw",
            Tool::OsuLatency => "osu_latency",
            Tool::OsuBw => "osu_bw",
            Tool::OsuBibw => "osu_bibw",
        }
    }

    /// `us` for latency tools, `MB/s` (10^6 bytes/s) for bandwidth tools.
    pub fn unit(self) -> &'static str {
        match self {
            Tool::PerftestLat { .. } | Tool::OsuLatency => "us",
            _ => "MB/s",
        }
    }
}

/// One measured point.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPoint {
    /// Message size, bytes.
    pub size_bytes: u64,
    /// The value in [`Tool::unit`]: one-way latency (us; perftest's typical = median), or
    /// bandwidth in 10^6 bytes/s (perftest's average).
    pub value: f64,
    /// 1-based line of the file it was read from.
    pub line: usize,
    /// Half of the last digit the tool printed, in [`Tool::unit`]: how far the true value
    /// may lie from `value` (`1.00` us: 0.005 us).
    pub resolution: f64,
}

/// A parsed tool output.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub tool: Tool,
    pub points: Vec<ToolPoint>,
}

/// What is wrong with a file, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub file: String,
    /// 1-based line, or 0 for the file as a whole.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{} line {}: {}", self.file, self.line, self.message)
        }
    }
}

/// Largest message size a tool line may give, bytes (perftest and OSU stop far below).
pub const MAX_SIZE_BYTES: u64 = 1 << 40;
/// Largest latency a line may give, us (an hour).
pub const MAX_LATENCY_US: f64 = 3.6e9;
/// Largest bandwidth a line may give, MB/s (10 PB/s).
pub const MAX_MBYTES_PER_S: f64 = 1e10;
/// Largest file read, bytes.
pub const MAX_FILE_BYTES: usize = 16 << 20;

const PERFTEST_MB: f64 = 1_048_576.0 / 1e6;

/// Reads and parses `path`.
pub fn read(path: &std::path::Path) -> Result<ToolOutput, ToolError> {
    let file = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| ToolError { file: file.clone(), line: 0, message: format!("cannot read: {e}") })?;
    if meta.len() > MAX_FILE_BYTES as u64 {
        return Err(ToolError { file, line: 0, message: format!("{} bytes: larger than a tool's output can be (at most {MAX_FILE_BYTES})", meta.len()) });
    }
    let bytes = std::fs::read(path).map_err(|e| ToolError { file: file.clone(), line: 0, message: format!("cannot read: {e}") })?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&file, &text)
}

/// Which tool wrote `text`, from its title line.
fn detect(text: &str) -> Option<Tool> {
    for l in text.lines().take(200) {
        let t = l.trim().to_ascii_lowercase();
        let bidir = text.contains("Bidirectional") || text.contains("bidirectional");
        let op = if t.contains("rdma_write") {
            Some("rdma_write")
        } else if t.contains("rdma_read") {
            Some("rdma_read")
        } else if t.starts_with("send ") {
            Some("send")
        } else {
            None
        };
        if let Some(op) = op {
            if t.contains("latency test") {
                return Some(Tool::PerftestLat { op });
            }
            if t.contains("bw test") {
                return Some(Tool::PerftestBw { op, bidirectional: bidir });
            }
        }
        // `# OSU ...`; pasted copies may have lost the space (`#OSU ...`).
        if t.starts_with("# osu") || t.starts_with("#osu") {
            if t.contains("bi-directional bandwidth") {
                return Some(Tool::OsuBibw);
            }
            if t.contains("bandwidth") {
                return Some(Tool::OsuBw);
            }
            if t.contains("latency") {
                return Some(Tool::OsuLatency);
            }
        }
    }
    None
}

/// Parses a tool's output; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<ToolOutput, ToolError> {
    let err = |line: usize, message: String| ToolError { file: file.to_string(), line, message };
    let tool = detect(text).ok_or_else(|| {
        err(0, "not a perftest or OSU output: no title line such as \"RDMA_Write Latency Test\", \"Send BW Test\" or \"# OSU MPI Latency Test\"".into())
    })?;
    // The header line names the columns; data lines follow it.
    let mut columns: Option<Vec<String>> = None;
    let mut points = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with("---") {
            continue;
        }
        let lower = l.to_ascii_lowercase();
        if lower.starts_with("#bytes") || lower.starts_with("# bytes") || lower.starts_with("# size") || lower.starts_with("#size") {
            columns = Some(header_columns(l));
            continue;
        }
        let Some(cols) = &columns else { continue };
        let fields: Vec<&str> = l.split_whitespace().collect();
        // Data lines start with a size; anything else after the header (warnings,
        // summaries) ends or interrupts the table and is skipped.
        let Ok(size) = fields[0].parse::<u64>() else { continue };
        if size > MAX_SIZE_BYTES {
            return Err(err(n, format!("size {size} bytes is out of range (at most {MAX_SIZE_BYTES})")));
        }
        let value = match tool {
            Tool::OsuLatency | Tool::OsuBw | Tool::OsuBibw => (field(&fields, 1).map_err(|m| err(n, m))?, half_digit(fields[1])),
            Tool::PerftestLat { .. } => {
                // t_typical (the median); older perftest prints only t_min, t_max, t_typical.
                let k = cols.iter().position(|c| c.starts_with("t_typical")).ok_or_else(|| err(n, "the header has no t_typical[usec] column".into()))?;
                (field(&fields, k).map_err(|m| err(n, m))?, half_digit(fields[k]))
            }
            Tool::PerftestBw { .. } => {
                let k = cols.iter().position(|c| c.starts_with("bw average")).ok_or_else(|| err(n, "the header has no \"BW average\" column".into()))?;
                let v = field(&fields, k).map_err(|m| err(n, m))?;
                let scale = if cols[k].contains("gb/sec") { 1000.0 / 8.0 } else { PERFTEST_MB };
                (v * scale, half_digit(fields[k]) * scale)
            }
        };
        let (value, resolution) = value;
        let max = if tool.unit() == "us" { MAX_LATENCY_US } else { MAX_MBYTES_PER_S };
        if !(value.is_finite() && value >= 0.0 && value <= max) {
            return Err(err(n, format!("{value} {} is out of range (0 to {max})", tool.unit())));
        }
        points.push(ToolPoint { size_bytes: size, value, line: n, resolution });
    }
    if columns.is_none() {
        return Err(err(0, format!("{}: no column header (\"#bytes ...\" or \"# Size ...\"): truncated?", tool.name())));
    }
    if points.is_empty() {
        return Err(err(0, format!("{}: a column header but no data lines: truncated?", tool.name())));
    }
    Ok(ToolOutput { tool, points })
}

/// Column names of a header line, lower case: perftest separates them by two or more
/// spaces (`t_min[usec]`, `BW average[MB/sec]`, `99% percentile[usec]`); OSU has two.
fn header_columns(l: &str) -> Vec<String> {
    let mut cols = Vec::new();
    let mut cur = String::new();
    let mut spaces = 0;
    for c in l.trim_start_matches('#').trim().chars() {
        if c == ' ' || c == '\t' {
            spaces += 1;
            continue;
        }
        if spaces >= 2 || (spaces == 1 && (cur == "bytes" || cur.starts_with("#bytes"))) {
            cols.push(std::mem::take(&mut cur));
        } else if spaces == 1 {
            cur.push(' ');
        }
        spaces = 0;
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        cols.push(cur);
    }
    // perftest's first two columns, `#bytes #iterations`, are one space apart.
    cols.iter()
        .flat_map(|c| if c.starts_with("bytes #iterations") || c.starts_with("bytes iterations") { vec!["bytes".to_string(), "iterations".to_string()] } else { vec![c.clone()] })
        .collect()
}

/// Half a unit of the last digit of a printed number (`1.00` -> 0.005, `12` -> 0.5).
fn half_digit(text: &str) -> f64 {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    let exp: i32 = text.split(['e', 'E']).nth(1).and_then(|e| e.parse().ok()).unwrap_or(0).clamp(-30, 30);
    let decimals = mantissa.split('.').nth(1).map_or(0, |d| d.len().min(30) as i32);
    0.5 * 10f64.powi(exp - decimals)
}

/// Writes points in the text format `tool` prints (perftest's report of `ib_*_lat`
/// (`t_typical` = the value, two decimals) or `ib_*_bw` (MB/sec = 2^20 B/s, two decimals);
/// OSU's two columns, two decimals), so the model's own predictions can be read back as a
/// user's file. `points` are (size in bytes, value in [`Tool::unit`]).
pub fn render(tool: Tool, points: &[(u64, f64)]) -> String {
    let rule = "-".repeat(87);
    let mut s = String::new();
    match tool {
        Tool::PerftestLat { op } | Tool::PerftestBw { op, .. } => {
            let title = match op {
                "send" => "Send",
                "rdma_read" => "RDMA_Read",
                _ => "RDMA_Write",
            };
            let lat = matches!(tool, Tool::PerftestLat { .. });
            let bidir = if let Tool::PerftestBw { bidirectional: true, .. } = tool { "Bidirectional " } else { "" };
            s.push_str(&format!("{rule}\n                    {title} {bidir}{} Test\n", if lat { "Latency" } else { "BW" }));
            s.push_str(&format!(" Number of qps   : 1            Transport type : IB\n{rule}\n"));
            if lat {
                s.push_str(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n");
                for &(b, v) in points {
                    s.push_str(&format!(" {b:<7} {:<13} {v:<14.2} {v:<12.2} {v:<18.2} {v:<14.2} {:<15.2} {v:<22.2} {v:<.2}\n", 1000, 0.0));
                }
            } else {
                s.push_str(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
                for &(b, v) in points {
                    let mb = v / PERFTEST_MB;
                    s.push_str(&format!(" {b:<10} {:<14} {mb:<18.2} {mb:<20.2} {:.6}\n", 5000, v / b.max(1) as f64));
                }
            }
            s.push_str(&format!("{rule}\n"));
        }
        Tool::OsuLatency | Tool::OsuBw | Tool::OsuBibw => {
            let (title, col) = match tool {
                Tool::OsuLatency => ("Latency", "Latency (us)"),
                Tool::OsuBw => ("Bandwidth", "Bandwidth (MB/s)"),
                _ => ("Bi-Directional Bandwidth", "Bandwidth (MB/s)"),
            };
            s.push_str(&format!("# OSU MPI {title} Test v5.6.2\n# Size      {col}\n"));
            for &(b, v) in points {
                s.push_str(&format!("{b:<20}{v:>12.2}\n"));
            }
        }
    }
    s
}

fn field(fields: &[&str], k: usize) -> Result<f64, String> {
    let f = fields.get(k).ok_or_else(|| format!("column {} missing (the line has {} fields): truncated?", k + 1, fields.len()))?;
    f.parse::<f64>().map_err(|_| format!("column {}: `{f}` is not a number", k + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITE_LAT: &str = "\
---------------------------------------------------------------------------------------
                    RDMA_Write Latency Test
 Dual-port       : OFF          Device         : mlx5_0
 Number of qps   : 1            Transport type : IB
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          0.98           3.62         1.00                1.01           0.05            1.15                    3.62   
 4       1000          0.99           2.10         1.02                1.02           0.02            1.10                    2.10   
---------------------------------------------------------------------------------------
";

    const SEND_BW_GBITS: &str = "\
                    Send BW Test
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1000             97.50              97.42               0.185818
";

    const WRITE_BW: &str = "\
                    RDMA_Write BW Test
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      5000             11634.14            11630.98            0.186096
";

    const OSU_BW: &str = "# OSU MPI Bandwidth Test v5.6.2\n# Size      Bandwidth (MB/s)\n1                       3.05\n4194304             12345.67\n";
    const OSU_LAT: &str = "# OSU MPI Latency Test v5.6.2\n# Size          Latency (us)\n0                       1.12\n8                       1.15\n";

    #[test]
    fn perftest_and_osu_outputs_in_the_models_units() {
        let w = parse("w.txt", WRITE_LAT).unwrap();
        assert_eq!(w.tool, Tool::PerftestLat { op: "rdma_write" });
        assert_eq!(w.points, vec![ToolPoint { size_bytes: 2, value: 1.00, line: 7, resolution: 0.005 }, ToolPoint { size_bytes: 4, value: 1.02, line: 8, resolution: 0.005 }]);
        let s = parse("s.txt", SEND_BW_GBITS).unwrap();
        assert_eq!(s.tool, Tool::PerftestBw { op: "send", bidirectional: false });
        assert!((s.points[0].value - 97.42 * 125.0).abs() < 1e-9, "Gb/s to 10^6 B/s");
        let b = parse("b.txt", WRITE_BW).unwrap();
        assert!((b.points[0].value - 11630.98 * 1.048576).abs() < 1e-6, "perftest MB/sec is 2^20 B/s");
        let o = parse("o.txt", OSU_BW).unwrap();
        assert_eq!((o.tool, o.points.len(), o.points[1].value), (Tool::OsuBw, 2, 12345.67));
        let n = parse("n.txt", &OSU_BW.replace("# ", "#")).unwrap();
        assert_eq!((n.tool, n.points.len()), (Tool::OsuBw, 2), "#OSU and #Size without a space");
        let l = parse("l.txt", OSU_LAT).unwrap();
        assert_eq!((l.tool, l.points[0].size_bytes, l.points[1].value), (Tool::OsuLatency, 0, 1.15));
    }

    #[test]
    fn what_render_writes_reads_back_to_the_printed_digits() {
        let tools = [
            Tool::PerftestLat { op: "send" },
            Tool::PerftestLat { op: "rdma_write" },
            Tool::PerftestLat { op: "rdma_read" },
            Tool::PerftestBw { op: "rdma_write", bidirectional: false },
            Tool::PerftestBw { op: "send", bidirectional: true },
            Tool::PerftestBw { op: "rdma_read", bidirectional: false },
            Tool::OsuLatency,
            Tool::OsuBw,
            Tool::OsuBibw,
        ];
        let pts = [(2u64, 1.2345), (65536, 12196.07), (4194304, 23456.789)];
        for t in tools {
            let o = parse("r.txt", &render(t, &pts)).unwrap_or_else(|e| panic!("{t:?}: {e}"));
            assert_eq!(o.tool, t);
            assert_eq!(o.points.len(), 3);
            for (p, &(b, v)) in o.points.iter().zip(&pts) {
                assert_eq!(p.size_bytes, b);
                assert!((p.value - v).abs() <= p.resolution * 1.0001, "{t:?} {b}: {} vs {v} (resolution {})", p.value, p.resolution);
                let want = if matches!(t, Tool::PerftestBw { .. }) { 0.005 * PERFTEST_MB } else { 0.005 };
                assert!((p.resolution - want).abs() < 1e-12, "{t:?}: {}", p.resolution);
            }
        }
        assert_eq!(half_digit("12"), 0.5);
        assert!((half_digit("1.5e3") - 50.0).abs() < 1e-9);
    }

    #[test]
    fn bad_or_truncated_files_name_file_and_line() {
        let e = parse("x.txt", "hello\n").unwrap_err();
        assert!(e.to_string().starts_with("x.txt: not a perftest or OSU output"), "{e}");
        let e = parse("t.txt", "                    RDMA_Write Latency Test\n").unwrap_err();
        assert!(e.to_string().contains("no column header") && e.to_string().contains("truncated"), "{e}");
        let cut = &WRITE_LAT[..WRITE_LAT.find(" 2       1000").unwrap() + 20];
        let e = parse("c.txt", cut).unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        assert!(e.message.contains("missing"), "{e}");
        let e = parse("n.txt", &OSU_BW.replace("12345.67", "1e300")).unwrap_err();
        assert!(e.to_string().contains("n.txt line 4") && e.message.contains("out of range"), "{e}");
        let e = parse("z.txt", &OSU_LAT.replace("1.15", "fast")).unwrap_err();
        assert!(e.message.contains("`fast` is not a number"), "{e}");
    }

    #[test]
    fn any_text_gives_a_result_or_an_error_never_a_panic() {
        // A fixed-seed fuzz of mutated outputs: byte flips, cuts, duplicated lines.
        let seeds = [WRITE_LAT, SEND_BW_GBITS, WRITE_BW, OSU_BW, OSU_LAT];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let base = seeds[round % seeds.len()].as_bytes();
            let mut b = base.to_vec();
            for _ in 0..(next() % 8) {
                if b.is_empty() {
                    break;
                }
                let k = (next() as usize) % b.len();
                match next() % 4 {
                    0 => b[k] = (next() % 256) as u8,
                    1 => b.truncate(k),
                    2 => b.insert(k, b"0123456789. #-\n"[(next() % 15) as usize]),
                    _ => {
                        let tail = b[k..].to_vec();
                        b.extend_from_slice(&tail);
                    }
                }
            }
            let text = String::from_utf8_lossy(&b);
            if let Ok(o) = parse("f", &text) {
                assert!(!o.points.is_empty());
                assert!(o.points.iter().all(|p| p.value.is_finite() && p.value >= 0.0 && p.size_bytes <= MAX_SIZE_BYTES));
            }
        }
    }
}
