//! The one error type of this crate.
//!
//! Every variant names where the problem is (file or path, line, column) and what was
//! expected, so that a user can fix the input without reading code.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong while reading claims or writing a report.
#[derive(Debug)]
pub enum ReportError {
    /// The CSV text is not valid RFC 4180 (for example an unterminated quoted field).
    CsvSyntax {
        /// Name of the CSV source, as given by the caller (usually its file name).
        source_name: String,
        /// 1-based line on which the problem was found.
        line: usize,
        /// What is wrong and what was expected instead.
        message: String,
    },
    /// The CSV text has no header line at all.
    MissingHeader {
        /// Name of the CSV source.
        source_name: String,
    },
    /// The header line lacks a required column, or names one twice.
    BadHeader {
        /// Name of the CSV source.
        source_name: String,
        /// The column concerned.
        column: String,
        /// What was expected.
        expected: String,
    },
    /// A record has a different number of fields than the header.
    ColumnCount {
        /// Name of the CSV source.
        source_name: String,
        /// 1-based line on which the record starts.
        line: usize,
        /// Number of columns of the header.
        expected: usize,
        /// Number of fields found in the record.
        found: usize,
    },
    /// One field of a record could not be understood.
    BadField {
        /// Name of the CSV source.
        source_name: String,
        /// 1-based line on which the record starts.
        line: usize,
        /// Name of the column (from the header), e.g. `value`.
        column: String,
        /// The offending text, as found.
        found: String,
        /// What was expected, e.g. "a finite number".
        expected: String,
    },
    /// The same claim id appears on two records.
    DuplicateId {
        /// Name of the CSV source.
        source_name: String,
        /// 1-based line of the second occurrence.
        line: usize,
        /// The repeated id.
        id: String,
        /// 1-based line of the first occurrence.
        first_line: usize,
    },
    /// A figure of a report cannot be written under its id.
    BadFigureId {
        /// The figure id as given.
        id: String,
        /// What was expected of it.
        expected: String,
    },
    /// A study section of a report has an unusable id.
    BadStudyId {
        /// The study id as given.
        id: String,
        /// What was expected of it.
        expected: String,
    },
    /// Reading or writing a file or directory failed.
    Io {
        /// The path concerned.
        path: PathBuf,
        /// What was being done, e.g. "create directory", "write".
        action: &'static str,
        /// The underlying operating-system error.
        source: std::io::Error,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::CsvSyntax { source_name, line, message } => {
                write!(f, "{source_name}:{line}: invalid CSV: {message}")
            }
            ReportError::MissingHeader { source_name } => {
                write!(f, "{source_name}: empty file: expected a header line naming the columns")
            }
            ReportError::BadHeader { source_name, column, expected } => {
                write!(f, "{source_name}:1: header, column `{column}`: expected {expected}")
            }
            ReportError::ColumnCount { source_name, line, expected, found } => write!(
                f,
                "{source_name}:{line}: expected {expected} columns as in the header, found {found}"
            ),
            ReportError::BadField { source_name, line, column, found, expected } => write!(
                f,
                "{source_name}:{line}: column `{column}`: expected {expected}, found {found:?}"
            ),
            ReportError::DuplicateId { source_name, line, id, first_line } => write!(
                f,
                "{source_name}:{line}: column `id`: duplicate claim id {id:?} (first on line {first_line})"
            ),
            ReportError::BadFigureId { id, expected } => {
                write!(f, "figure id {id:?}: expected {expected}")
            }
            ReportError::BadStudyId { id, expected } => {
                write!(f, "study id {id:?}: expected {expected}")
            }
            ReportError::Io { path, action, source } => {
                write!(f, "{}: cannot {action}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReportError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn display_names_location_and_expectation() {
        let e = ReportError::BadField {
            source_name: "claims.csv".into(),
            line: 7,
            column: "value".into(),
            found: "abc".into(),
            expected: "a finite number".into(),
        };
        assert_eq!(
            e.to_string(),
            "claims.csv:7: column `value`: expected a finite number, found \"abc\""
        );
        assert!(e.source().is_none());
    }

    #[test]
    fn io_error_has_source_and_path() {
        let e = ReportError::Io {
            path: PathBuf::from("/x/y"),
            action: "write",
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
        };
        assert!(e.to_string().starts_with("/x/y: cannot write: "));
        assert!(e.source().is_some());
    }
}
