//! Writing the report's files to a directory.

use super::page::render_html;
use super::{Report, ReportFiles};
use crate::claims::claims_json;
use crate::figure::render_svg;
use crate::ReportError;
use std::collections::BTreeSet;
use std::path::Path;

/// Writes the report into `dir` (created if missing, like its `figures` subdirectory):
///
/// * `dir/report.html`: the self-contained page ([`render_html`]);
/// * `dir/figures/<figure id>.svg`: every figure ([`render_svg`]);
/// * `dir/claims.json`: [`claims_json`] with the extra keys `version` and `generated`
///   (the report's `generated_note`).
///
/// Figure ids must be unique, non-empty, made of ASCII letters, digits, `-`, `_` and `.`
/// and not start with `.`; study ids must be unique and non-empty. Each file is written
/// to a temporary name first and then renamed, so a failed run leaves earlier files
/// whole. Other files already in `dir` are left alone. Errors name the path.
pub fn write_report(dir: &Path, report: &Report) -> Result<ReportFiles, ReportError> {
    check_ids(report)?;
    let figures_dir = dir.join("figures");
    create_dir(dir)?;
    create_dir(&figures_dir)?;

    let mut figures = Vec::new();
    for fig in report.studies.iter().flat_map(|s| &s.figures) {
        let path = figures_dir.join(format!("{}.svg", fig.id));
        write_file(&path, render_svg(fig).as_bytes())?;
        figures.push(path);
    }

    let extra = serde_json::json!({
        "schema": CLAIMS_SCHEMA,
        "kind": "interlab-claims",
        "version": report.version,
        "generated": report.generated_note,
    });
    let claims_path = dir.join("claims.json");
    write_file(&claims_path, claims_json(&report.claims, extra).as_bytes())?;

    let html = dir.join("report.html");
    write_file(&html, render_html(report).as_bytes())?;
    Ok(ReportFiles {
        html,
        claims_json: claims_path,
        figures,
    })
}

/// Version of the claims.json layout (`"schema"`, with `"kind": "interlab-claims"`).
pub const CLAIMS_SCHEMA: u32 = 1;

fn check_ids(report: &Report) -> Result<(), ReportError> {
    let mut studies = BTreeSet::new();
    for study in &report.studies {
        if study.id.trim().is_empty() || !studies.insert(study.id.as_str()) {
            return Err(ReportError::BadStudyId {
                id: study.id.clone(),
                expected: "a non-empty id used by one study only".to_string(),
            });
        }
    }
    let mut figures = BTreeSet::new();
    for fig in report.studies.iter().flat_map(|s| &s.figures) {
        let id = fig.id.as_str();
        let safe = !id.is_empty()
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !safe {
            return Err(ReportError::BadFigureId {
                id: id.to_string(),
                expected: "a file stem of ASCII letters, digits, '-', '_' and '.', not starting with '.', e.g. pcie-fig6"
                    .to_string(),
            });
        }
        if !figures.insert(id) {
            return Err(ReportError::BadFigureId {
                id: id.to_string(),
                expected: "an id used by one figure only".to_string(),
            });
        }
    }
    Ok(())
}

fn create_dir(path: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        action: "create directory",
        source,
    })
}

/// Writes `bytes` to `path` via a temporary sibling file and a rename.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    std::fs::write(&tmp, bytes).map_err(|source| ReportError::Io {
        path: tmp.clone(),
        action: "write",
        source,
    })?;
    std::fs::rename(&tmp, path).map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        ReportError::Io {
            path: path.to_path_buf(),
            action: "replace",
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{check_markup, sample_report, scratch_dir, HTML_VOID};

    #[test]
    fn writes_all_files() {
        let dir = scratch_dir("write").join("nested/out");
        let report = sample_report();
        let files = write_report(&dir, &report).unwrap();
        assert_eq!(files.html, dir.join("report.html"));
        assert_eq!(files.claims_json, dir.join("claims.json"));
        assert_eq!(
            files.figures,
            vec![
                dir.join("figures/pcie-fig6.svg"),
                dir.join("figures/pcie-fig3.svg")
            ]
        );
        let html = std::fs::read_to_string(&files.html).unwrap();
        assert!(check_markup(&html, HTML_VOID).is_ok());
        for fig in &files.figures {
            let svg = std::fs::read_to_string(fig).unwrap();
            assert!(check_markup(&svg, &[]).is_ok());
            assert!(
                html.contains(svg.trim_end()),
                "the page inlines the same SVG"
            );
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&files.claims_json).unwrap()).unwrap();
        assert_eq!(json["version"], "0.1.0");
        assert_eq!(json["generated"], "interlab reproduce --seed 1");
        assert_eq!(json["schema"], 1);
        assert_eq!(json["kind"], "interlab-claims");
        assert_eq!(json["claims"].as_array().unwrap().len(), 6);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // Writing again gives the same bytes.
        write_report(&dir, &report).unwrap();
        assert_eq!(std::fs::read_to_string(&files.html).unwrap(), html);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn rejects_unsafe_or_duplicate_figure_ids() {
        let dir = scratch_dir("bad-id");
        for bad in ["../escape", "", ".hidden", "a b", "pcie/fig6"] {
            let mut report = sample_report();
            report.studies[0].figures[0].id = bad.to_string();
            let e = write_report(&dir, &report).unwrap_err();
            assert!(matches!(e, ReportError::BadFigureId { .. }), "{bad}: {e}");
        }
        let mut report = sample_report();
        report.studies[0].figures[1].id = "pcie-fig6".to_string();
        let e = write_report(&dir, &report).unwrap_err().to_string();
        assert!(
            e.contains("pcie-fig6") && e.contains("one figure only"),
            "{e}"
        );
        let mut report = sample_report();
        report.studies[1].id = "pcie".to_string();
        assert!(matches!(
            write_report(&dir, &report),
            Err(ReportError::BadStudyId { .. })
        ));
        assert!(!dir.exists(), "nothing written on invalid input");
    }

    #[test]
    fn io_errors_name_the_path() {
        let base = scratch_dir("io");
        std::fs::create_dir_all(&base).unwrap();
        let blocker = base.join("file");
        std::fs::write(&blocker, "x").unwrap();
        let e = write_report(&blocker.join("out"), &sample_report()).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ReportError::Io { .. }));
        assert!(
            text.contains(&blocker.join("out").display().to_string()),
            "{text}"
        );
        assert!(text.contains("cannot create directory"), "{text}");
        let _ = std::fs::remove_dir_all(base);
    }
}
