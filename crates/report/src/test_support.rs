//! Helpers for the unit tests: a small well-formedness checker and scratch directories.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// HTML elements that never have a closing tag.
pub const HTML_VOID: &[&str] = &["meta", "br", "hr", "img", "link", "input", "col", "wbr"];

/// Checks that `text` is well formed: tags balance (except the `void` elements, which
/// must not be closed), attribute values are quoted, `&` starts an entity and `<` only
/// starts markup. Comments, `<!DOCTYPE>` and `<?...?>` are skipped.
pub fn check_markup(text: &str, void: &[&str]) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(pos) = rest.find(['<', '&']) {
        let at = offset + pos;
        let tail = &rest[pos..];
        let consumed = if tail.starts_with('&') {
            let end = tail.find(';').ok_or(format!("at {at}: '&' without ';'"))?;
            let name = &tail[1..end];
            let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                || (name.starts_with('#')
                    && name.len() > 1
                    && name[1..].chars().all(|c| c.is_ascii_digit()));
            if !ok {
                return Err(format!("at {at}: bad entity &{name};"));
            }
            end + 1
        } else if tail.starts_with("<!--") {
            tail.find("-->")
                .ok_or(format!("at {at}: unclosed comment"))?
                + 3
        } else if tail.starts_with("<!") || tail.starts_with("<?") {
            tail.find('>')
                .ok_or(format!("at {at}: unclosed declaration"))?
                + 1
        } else {
            let end = tag_end(tail).ok_or(format!("at {at}: unclosed tag"))?;
            let inner = &tail[1..end];
            if let Some(name) = inner.strip_prefix('/') {
                let name = name.trim();
                match stack.pop() {
                    Some(open) if open == name => {}
                    other => return Err(format!("at {at}: </{name}> closes {other:?}")),
                }
            } else {
                let self_closing = inner.ends_with('/');
                let body = inner.trim_end_matches('/');
                let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':')
                {
                    return Err(format!("at {at}: bad tag name {name:?}"));
                }
                check_attributes(&body[name.len()..])
                    .map_err(|e| format!("at {at}: <{name}>: {e}"))?;
                let is_void = void.contains(&name.as_str());
                if !self_closing && !is_void {
                    stack.push(name);
                }
            }
            end + 1
        };
        offset += pos + consumed;
        rest = &tail[consumed..];
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(())
}

/// Index of the `>` ending the tag at the start of `tail`, skipping quoted values.
fn tag_end(tail: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in tail.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '<') => return None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// Attributes are `name="value"` or `name='value'` (or a bare name), values without `<`.
fn check_attributes(mut s: &str) -> Result<(), String> {
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(());
        }
        let name_len = s
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(s.len());
        let name = &s[..name_len];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':' || c == '_')
        {
            return Err(format!("bad attribute name {name:?}"));
        }
        s = &s[name_len..];
        if let Some(after) = s.strip_prefix('=') {
            let q = after.chars().next().ok_or("attribute without value")?;
            if q != '"' && q != '\'' {
                return Err(format!("unquoted value of {name}"));
            }
            let end = after[1..].find(q).ok_or("unterminated attribute value")?;
            let value = &after[1..1 + end];
            if value.contains('<') {
                return Err(format!("'<' in value of {name}"));
            }
            s = &after[end + 2..];
        }
    }
}

/// A fresh, empty directory under the system temp dir, unique per call and process.
pub fn scratch_dir(name: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir =
        std::env::temp_dir().join(format!("interlab-report-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn checker_accepts_good_and_rejects_bad_markup() {
    assert!(check_markup(r#"<a x="1"><b/>t &amp; <c y='>'>u</c></a>"#, &[]).is_ok());
    assert!(check_markup(
        "<!DOCTYPE html><html><meta charset=\"utf-8\"><p>x</p></html>",
        HTML_VOID
    )
    .is_ok());
    assert!(check_markup("<a><b></a>", &[]).is_err());
    assert!(check_markup("<a>", &[]).is_err());
    assert!(check_markup("<a x=1></a>", &[]).is_err());
    assert!(check_markup("<a>&foo;</a>", &[]).is_err());
    assert!(check_markup("<a>x & y</a>", &[]).is_err());
    assert!(check_markup("<a>x < y</a>", &[]).is_err());
}

/// A bandwidth-style figure with two series and both kinds of marks.
pub fn sample_figure(id: &str, study: &str) -> crate::Figure {
    use crate::{Figure, Mark, Scale, Series};
    let sizes: Vec<f64> = (0..=22).map(|e| 2f64.powi(e)).collect();
    Figure {
        id: id.to_string(),
        study: study.to_string(),
        title: "Uni-directional RDMA write bandwidth <window 64> & more".to_string(),
        x_label: "Message size (bytes)".to_string(),
        y_label: "Bandwidth (MB/s)".to_string(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        series: vec![
            Series {
                label: "PCIe".to_string(),
                points: sizes
                    .iter()
                    .map(|&s| (s, 968.0 * s / (s + 2048.0)))
                    .collect(),
                dashed: false,
            },
            Series {
                label: "PCI-X".to_string(),
                points: sizes
                    .iter()
                    .map(|&s| (s, 778.0 * s / (s + 4096.0)))
                    .collect(),
                dashed: true,
            },
        ],
        marks: vec![
            Mark {
                label: "paper: 968".to_string(),
                claim_id: "pcie.bw.uni_pcie".to_string(),
                x: None,
                y: 968.0,
            },
            Mark {
                label: "paper: 778".to_string(),
                claim_id: "pcie.bw.uni_pcix".to_string(),
                x: Some(4194304.0),
                y: 778.0,
            },
        ],
        caption: "Model vs paper; \"dashed\" = PCI-X.".to_string(),
    }
}

/// A report with two studies (one with two figures, one without any), claims of every
/// status, and a paper (`sdp`) that has claims but no section.
pub fn sample_report() -> crate::Report {
    use crate::{evaluate, parse_claims_csv, Report, StudySection};
    let csv = "id,paper,figure,testbed,description,unit,value,tolerance\n\
        pcie.bw.uni_pcie,pcie,fig6,tb,Peak uni bandwidth PCIe,MB/s,968,0.15\n\
        pcie.bw.uni_pcix,pcie,fig6,tb,Peak uni bandwidth PCI-X,MB/s,778,0.15\n\
        pcie.lat.write_pcie,pcie,fig3,tb,Write latency <PCIe>,us,3.8,0.15\n\
        pcie.lat.read_pcix,pcie,fig4,tb,Read latency PCI-X,us,,0.15\n\
        vpi.bw.sdp_dip_4k,vpi,fig2,tb,SDP dip at 4 KiB,bool,true,\n\
        sdp.lat.min,sdp,fig1a,tb,SDP latency,us,10,\n";
    let specs = parse_claims_csv(csv, "sample.csv").expect("sample CSV parses");
    let values: Vec<Option<crate::ClaimValue>> = vec![
        Some(990.0.into()),
        Some(600.0.into()),
        Some(4.0.into()),
        Some(7.3.into()),
        None,
        None,
    ];
    let claims = specs
        .iter()
        .zip(values)
        .map(|(s, v)| {
            evaluate(
                s,
                v,
                (s.id == "pcie.bw.uni_pcix").then(|| "bus-limited".to_string()),
            )
        })
        .collect();
    let mut fig3 = sample_figure("pcie-fig3", "pcie");
    fig3.title = "RDMA write latency".to_string();
    Report {
        title: "interlab demo & test".to_string(),
        version: "0.1.0".to_string(),
        generated_note: "interlab reproduce --seed 1".to_string(),
        studies: vec![
            StudySection {
                id: "pcie".to_string(),
                title: "PCI Express vs PCI-X".to_string(),
                summary: "HCAs on two buses.".to_string(),
                figures: vec![sample_figure("pcie-fig6", "pcie"), fig3],
            },
            StudySection {
                id: "vpi".to_string(),
                title: "ConnectX VPI".to_string(),
                summary: String::new(),
                figures: vec![],
            },
        ],
        claims,
        footer: "model run time 1.0 s".to_string(),
    }
}
