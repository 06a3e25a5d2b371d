//! A small RFC 4180 reader: comma-separated fields, `"`-quoted fields that may hold
//! commas, doubled quotes and line breaks; records end at LF, CRLF or CR.
//!
//! It knows nothing about claims: it turns text into records with their line numbers.

use crate::ReportError;

/// One CSV record and the 1-based line on which it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// 1-based line of the record's first character.
    pub line: usize,
    /// The fields, unquoted and unescaped, in order.
    pub fields: Vec<String>,
}

/// Splits `text` into records. Completely empty lines are skipped; a leading UTF-8 byte
/// order mark is ignored.
pub(crate) fn read_records(text: &str, source_name: &str) -> Result<Vec<Record>, ReportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;

    let syntax = |line: usize, message: &str| ReportError::CsvSyntax {
        source_name: source_name.to_string(),
        line,
        message: message.to_string(),
    };

    while chars.peek().is_some() {
        let start_line = line;
        let mut fields = Vec::new();
        let mut field = String::new();
        // Reads one record: loop over fields until the end of the line or text.
        loop {
            if chars.peek() == Some(&'"') {
                chars.next();
                let quote_line = line;
                loop {
                    match chars.next() {
                        None => {
                            return Err(syntax(
                                quote_line,
                                "quoted field is never closed: expected a closing '\"'",
                            ))
                        }
                        Some('"') => {
                            if chars.peek() == Some(&'"') {
                                chars.next();
                                field.push('"');
                            } else {
                                break;
                            }
                        }
                        Some(c) => {
                            if c == '\n' || (c == '\r' && chars.peek() != Some(&'\n')) {
                                line += 1;
                            }
                            field.push(c);
                        }
                    }
                }
                match chars.peek() {
                    None | Some(',') | Some('\n') | Some('\r') => {}
                    Some(_) => {
                        return Err(syntax(
                            line,
                            "unexpected text after a closing quote: expected ',' or the end of the line",
                        ))
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '\n' || c == '\r' {
                        break;
                    }
                    if c == '"' {
                        return Err(syntax(
                            line,
                            "'\"' inside an unquoted field: quote the whole field and double the inner quote",
                        ));
                    }
                    field.push(c);
                    chars.next();
                }
            }
            fields.push(std::mem::take(&mut field));
            match chars.next() {
                Some(',') => continue,
                Some('\r') => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    line += 1;
                    break;
                }
                Some('\n') => {
                    line += 1;
                    break;
                }
                // Fields end only at ',', a line break or the end of the text.
                _ => break,
            }
        }
        let blank = fields.len() == 1 && fields[0].is_empty();
        if !blank {
            records.push(Record {
                line: start_line,
                fields,
            });
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<Vec<String>> {
        read_records(text, "t.csv")
            .unwrap()
            .into_iter()
            .map(|r| r.fields)
            .collect()
    }

    #[test]
    fn plain_records_and_line_endings() {
        assert_eq!(fields("a,b\n1,2\n"), vec![vec!["a", "b"], vec!["1", "2"]]);
        assert_eq!(fields("a,b\r\n1,2"), vec![vec!["a", "b"], vec!["1", "2"]]);
        assert_eq!(fields("a,b\r1,2\r"), vec![vec!["a", "b"], vec!["1", "2"]]);
        assert_eq!(fields("a,,\n"), vec![vec!["a", "", ""]]);
    }

    #[test]
    fn quoted_fields() {
        assert_eq!(
            fields("\"x, y\",\"say \"\"hi\"\"\",\"two\nlines\"\nnext,1\n"),
            vec![vec!["x, y", "say \"hi\"", "two\nlines"], vec!["next", "1"]]
        );
        assert_eq!(fields("\"\",a"), vec![vec!["", "a"]]);
    }

    #[test]
    fn line_numbers_count_embedded_breaks_and_skip_blank_lines() {
        let recs = read_records("h\n\n\"a\nb\"\nc\n", "t.csv").unwrap();
        let lines: Vec<usize> = recs.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![1, 3, 5]);
    }

    #[test]
    fn bom_is_ignored() {
        assert_eq!(fields("\u{feff}id\n"), vec![vec!["id"]]);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = read_records("a\n\"open,\n", "t.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.csv:2: invalid CSV"), "{e}");
        let e = read_records("a\n\"x\"y,1\n", "t.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.csv:2") && e.contains("after a closing quote"),
            "{e}"
        );
        let e = read_records("a\nx\"y\n", "t.csv").unwrap_err().to_string();
        assert!(e.contains("t.csv:2") && e.contains("unquoted field"), "{e}");
    }
}
