//! Reading `claims.csv` into [`ClaimSpec`]s, with errors that name the file, the line,
//! the column and what was expected.

use super::csv::{read_records, Record};
use super::spec::{ClaimSpec, ClaimValue, BOOL_UNIT, UNITS};
use crate::ReportError;
use std::collections::BTreeMap;
use std::path::Path;

/// The columns `claims.csv` must have (in any order; further columns are ignored).
pub const COLUMNS: [&str; 8] = [
    "id",
    "paper",
    "figure",
    "testbed",
    "description",
    "unit",
    "value",
    "tolerance",
];

/// Parses the text of a claims CSV file (RFC 4180; header line first).
///
/// `source_name` is only used in error messages (pass the file name). Empty `value`
/// means withheld (`published: None`); empty `tolerance` means unspecified. Rows with
/// unit `bool` take `true` or `false` and no tolerance. Ids must be unique.
pub fn parse_claims_csv(text: &str, source_name: &str) -> Result<Vec<ClaimSpec>, ReportError> {
    let records = read_records(text, source_name)?;
    let mut records = records.into_iter();
    let header = records.next().ok_or_else(|| ReportError::MissingHeader {
        source_name: source_name.to_string(),
    })?;
    let columns = Columns::from_header(&header, source_name)?;

    let mut specs = Vec::new();
    let mut first_line_of: BTreeMap<String, usize> = BTreeMap::new();
    for record in records {
        let row = Row {
            record: &record,
            columns: &columns,
            source_name,
        };
        let spec = row.spec()?;
        if let Some(&first_line) = first_line_of.get(&spec.id) {
            return Err(ReportError::DuplicateId {
                source_name: source_name.to_string(),
                line: record.line,
                id: spec.id,
                first_line,
            });
        }
        first_line_of.insert(spec.id.clone(), record.line);
        specs.push(spec);
    }
    Ok(specs)
}

/// Reads and parses a claims CSV file; errors name the path.
pub fn read_claims_csv(path: &Path) -> Result<Vec<ClaimSpec>, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        action: "read",
        source,
    })?;
    parse_claims_csv(&text, &path.display().to_string())
}

/// Where each required column sits in a record.
struct Columns {
    index: [usize; COLUMNS.len()],
    count: usize,
}

impl Columns {
    fn from_header(header: &Record, source_name: &str) -> Result<Columns, ReportError> {
        let names: Vec<&str> = header.fields.iter().map(|f| f.trim()).collect();
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(ReportError::BadHeader {
                    source_name: source_name.to_string(),
                    column: name.to_string(),
                    expected: "each column name once".to_string(),
                });
            }
        }
        let mut index = [0; COLUMNS.len()];
        for (slot, wanted) in index.iter_mut().zip(COLUMNS) {
            *slot =
                names
                    .iter()
                    .position(|n| *n == wanted)
                    .ok_or_else(|| ReportError::BadHeader {
                        source_name: source_name.to_string(),
                        column: wanted.to_string(),
                        expected: format!(
                            "a column named `{wanted}` (required: {})",
                            COLUMNS.join(",")
                        ),
                    })?;
        }
        Ok(Columns {
            index,
            count: names.len(),
        })
    }
}

/// One data record being turned into a [`ClaimSpec`].
struct Row<'a> {
    record: &'a Record,
    columns: &'a Columns,
    source_name: &'a str,
}

impl Row<'_> {
    fn spec(&self) -> Result<ClaimSpec, ReportError> {
        if self.record.fields.len() != self.columns.count {
            return Err(ReportError::ColumnCount {
                source_name: self.source_name.to_string(),
                line: self.record.line,
                expected: self.columns.count,
                found: self.record.fields.len(),
            });
        }
        let id = self.text("id");
        if id.is_empty() || id.chars().any(char::is_whitespace) {
            return Err(self.bad("id", "a non-empty claim id without spaces"));
        }
        let paper = self.required("paper")?;
        let figure = self.required("figure")?;
        let unit = self.text("unit");
        if !UNITS.contains(&unit.as_str()) {
            return Err(self.bad("unit", &format!("one of {}", UNITS.join(", "))));
        }
        let is_bool = unit == BOOL_UNIT;
        let published = self.value(is_bool)?;
        let tolerance = self.tolerance(is_bool)?;
        Ok(ClaimSpec {
            id,
            paper,
            figure,
            testbed: self.text("testbed"),
            description: self.text("description"),
            unit,
            published,
            tolerance,
        })
    }

    /// The trimmed text of a column.
    fn text(&self, column: &str) -> String {
        let pos = COLUMNS.iter().position(|c| *c == column).unwrap_or(0);
        self.record
            .fields
            .get(self.columns.index[pos])
            .map(|f| f.trim().to_string())
            .unwrap_or_default()
    }

    fn required(&self, column: &str) -> Result<String, ReportError> {
        let text = self.text(column);
        if text.is_empty() {
            Err(self.bad(column, "a non-empty value"))
        } else {
            Ok(text)
        }
    }

    fn value(&self, is_bool: bool) -> Result<Option<ClaimValue>, ReportError> {
        let text = self.text("value");
        if text.is_empty() {
            return Ok(None);
        }
        if is_bool {
            return match text.as_str() {
                "true" => Ok(Some(ClaimValue::Bool(true))),
                "false" => Ok(Some(ClaimValue::Bool(false))),
                _ => Err(self.bad(
                    "value",
                    "`true` or `false` (unit is bool), or empty if withheld",
                )),
            };
        }
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Some(ClaimValue::Number(x))),
            _ => Err(self.bad("value", "a finite number, or empty if withheld")),
        }
    }

    fn tolerance(&self, is_bool: bool) -> Result<Option<f64>, ReportError> {
        let text = self.text("tolerance");
        if text.is_empty() {
            return Ok(None);
        }
        if is_bool {
            return Err(self.bad(
                "tolerance",
                "an empty field (bool claims have no tolerance)",
            ));
        }
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(self.bad(
                "tolerance",
                "a relative tolerance >= 0 such as 0.15, or empty",
            )),
        }
    }

    fn bad(&self, column: &str, expected: &str) -> ReportError {
        ReportError::BadField {
            source_name: self.source_name.to_string(),
            line: self.record.line,
            column: column.to_string(),
            found: self.text(column),
            expected: expected.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "id,paper,figure,testbed,description,unit,value,tolerance\n";

    fn parse(rows: &str) -> Result<Vec<ClaimSpec>, ReportError> {
        parse_claims_csv(&format!("{HEADER}{rows}"), "c.csv")
    }

    fn err(rows: &str) -> String {
        parse(rows).unwrap_err().to_string()
    }

    #[test]
    fn real_claims_file_parses() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/claims.csv");
        if !path.exists() {
            eprintln!("skipping: {} not found", path.display());
            return;
        }
        let specs = read_claims_csv(&path).unwrap();
        assert_eq!(specs.len(), 141);
        let first = &specs[0];
        assert_eq!(first.id, "vpi.lat.verbs_rdma_write_min");
        assert_eq!(first.paper, "vpi");
        assert_eq!(first.figure, "fig1");
        assert_eq!(first.unit, "us");
        assert_eq!(first.published, Some(ClaimValue::Number(1.22)));
        assert_eq!(first.tolerance, Some(0.15));
        assert!(
            specs.iter().any(|s| s.published.is_none()),
            "some values are withheld"
        );
        for s in specs.iter().filter(|s| s.is_bool()) {
            assert!(s.tolerance.is_none(), "{}", s.id);
            assert!(
                matches!(s.published, None | Some(ClaimValue::Bool(_))),
                "{}",
                s.id
            );
        }
        let papers: std::collections::BTreeSet<&str> =
            specs.iter().map(|s| s.paper.as_str()).collect();
        assert_eq!(papers.len(), 5, "{papers:?}");
    }

    #[test]
    fn good_rows_with_quoting_and_any_column_order() {
        let text = "value,id,paper,figure,testbed,description,unit,tolerance,extra\r\n\
                    12650,a.b,vpi,fig2,tb,\"Peak, single \"\"stream\"\"\",Mb/s,0.15,x\r\n\
                    ,a.c,vpi,fig2,tb,withheld,bool,,\r\n\
                    false,a.d,vpi,fig3,tb,no,bool,,\r\n";
        let specs = parse_claims_csv(text, "c.csv").unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].description, "Peak, single \"stream\"");
        assert_eq!(specs[0].published, Some(ClaimValue::Number(12650.0)));
        assert_eq!(specs[1].published, None);
        assert_eq!(specs[2].published, Some(ClaimValue::Bool(false)));
    }

    #[test]
    fn empty_text_has_no_header() {
        assert!(matches!(
            parse_claims_csv("", "c.csv"),
            Err(ReportError::MissingHeader { .. })
        ));
        assert!(matches!(
            parse_claims_csv("\n\n", "c.csv"),
            Err(ReportError::MissingHeader { .. })
        ));
    }

    #[test]
    fn header_only_is_empty_list() {
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn missing_or_duplicate_header_column() {
        let e = parse_claims_csv("id,paper,figure,testbed,description,unit,value\n", "c.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.csv:1") && e.contains("`tolerance`"), "{e}");
        let e = parse_claims_csv(
            "id,id,paper,figure,testbed,description,unit,value,tolerance\n",
            "c.csv",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`id`") && e.contains("once"), "{e}");
    }

    #[test]
    fn wrong_column_count() {
        let e = err("a,vpi,fig1,tb,d,us,1.0\n");
        assert_eq!(e, "c.csv:2: expected 8 columns as in the header, found 7");
    }

    #[test]
    fn bad_number_in_value() {
        let e = err("a,vpi,fig1,tb,d,us,1.0,0.1\nb,vpi,fig1,tb,d,us,1.2x,0.1\n");
        assert_eq!(e, "c.csv:3: column `value`: expected a finite number, or empty if withheld, found \"1.2x\"");
        assert!(err("a,vpi,fig1,tb,d,us,NaN,0.1\n").contains("finite number"));
        assert!(err("a,vpi,fig1,tb,d,us,inf,0.1\n").contains("finite number"));
    }

    #[test]
    fn bool_not_true_or_false() {
        let e = err("a,vpi,fig1,tb,d,bool,yes,\n");
        assert!(
            e.starts_with("c.csv:2: column `value`: expected `true` or `false`"),
            "{e}"
        );
    }

    #[test]
    fn bool_with_tolerance() {
        let e = err("a,vpi,fig1,tb,d,bool,true,0.1\n");
        assert!(
            e.contains("column `tolerance`") && e.contains("bool claims have no tolerance"),
            "{e}"
        );
    }

    #[test]
    fn bad_tolerance() {
        assert!(err("a,vpi,fig1,tb,d,us,1,-0.1\n").contains("column `tolerance`"));
        assert!(err("a,vpi,fig1,tb,d,us,1,15%\n").contains("found \"15%\""));
    }

    #[test]
    fn unknown_unit() {
        let e = err("a,vpi,fig1,tb,d,Gb/s,1,0.1\n");
        assert!(
            e.contains("column `unit`") && e.contains("one of us, ms"),
            "{e}"
        );
    }

    #[test]
    fn empty_or_spaced_id_and_missing_paper_or_figure() {
        assert!(err(",vpi,fig1,tb,d,us,1,0.1\n").contains("column `id`"));
        assert!(err("a b,vpi,fig1,tb,d,us,1,0.1\n").contains("without spaces"));
        assert!(
            err("a,,fig1,tb,d,us,1,0.1\n").contains("column `paper`: expected a non-empty value")
        );
        assert!(err("a,vpi,,tb,d,us,1,0.1\n").contains("column `figure`"));
    }

    #[test]
    fn duplicate_id() {
        let e =
            err("a,vpi,fig1,tb,d,us,1,0.1\nb,vpi,fig1,tb,d,us,1,0.1\n\na,vpi,fig2,tb,d,us,2,0.1\n");
        assert_eq!(
            e,
            "c.csv:5: column `id`: duplicate claim id \"a\" (first on line 2)"
        );
    }

    #[test]
    fn csv_syntax_error_passes_through() {
        let e = err("a,vpi,fig1,tb,\"unterminated,us,1,0.1\n");
        assert!(e.starts_with("c.csv:2: invalid CSV"), "{e}");
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = read_claims_csv(Path::new("/nonexistent/claims.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/claims.csv: cannot read"), "{e}");
    }
}
