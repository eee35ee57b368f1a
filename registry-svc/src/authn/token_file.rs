//! `--token-auth-file`: upstream's static token file (`apiserver/pkg/authentication/token/
//! tokenfile`), a CSV of `token,user name,user uid[,"group1,group2"]`, read once at start.
//! Its errors and warnings are upstream's: fewer than 3 columns refuses the file, an empty
//! token is skipped, a repeated token is warned about and the later row wins.
//!
//! The CSV reading follows Go's `encoding/csv` as upstream configures it (any number of fields
//! per record, no comment character, no trimming): fields may be quoted, a quote inside a
//! quoted field is doubled, blank lines are skipped.

use std::{collections::HashMap, path::Path};

use super::UserInfo;

/// The tokens of a token file, each with its user.
#[derive(Default, Clone)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

/// Never the tokens: a `{:?}` of the authenticator must not write secrets to a log.
impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenFile({} tokens)", self.tokens.len())
    }
}

impl TokenFile {
    /// Reads the file at `path`; an error says why, in upstream's words where it has them.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--token-auth-file {}: {e}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses the file's `text`; `path` names it in errors and warnings.
    pub fn parse(text: &str, path: &str) -> Result<Self, String> {
        let mut tokens = HashMap::new();
        // A byte-order mark (editors on Windows write one) is no part of the first token.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (number, record) in records(text)?.into_iter().enumerate() {
            let number = number + 1;
            if record.len() < 3 {
                return Err(format!(
                    "token file '{path}' must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                ));
            }
            if record[0].is_empty() {
                tracing::warn!(
                    "empty token has been found in token file '{path}', record number '{number}'"
                );
                continue;
            }
            if tokens.contains_key(&record[0]) {
                tracing::warn!(
                    "duplicate token has been found in token file '{path}', record number '{number}'"
                );
            }
            let groups = record
                .get(3)
                .map(|g| g.split(',').map(String::from).collect())
                .unwrap_or_default();
            tokens.insert(
                record[0].clone(),
                UserInfo {
                    name: record[1].clone(),
                    uid: record[2].clone(),
                    groups,
                    extra: Default::default(),
                },
            );
        }
        Ok(Self { tokens })
    }

    /// The user of `token`, if the file has it. Every token is compared, each in constant
    /// time (stricter than upstream's map lookup): how long a lookup takes says nothing about
    /// how much of a guess was right, only how many tokens the file holds.
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        let mut found = None;
        for (known, user) in &self.tokens {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(user);
            }
        }
        found
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Equality of two byte strings in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The records of a CSV text, as Go's `encoding/csv` reads them.
fn records(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut out = Vec::new();
    let mut record: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let (mut line, mut column) = (1usize, 0usize);
    let mut in_quotes = false;
    let mut quoted_field = false;
    let mut record_started = false;
    while let Some(c) = chars.next() {
        column += 1;
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    column += 1;
                    field.push('"');
                }
                '"' => in_quotes = false,
                '\n' => {
                    field.push('\n');
                    line += 1;
                    column = 0;
                }
                c => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() && !quoted_field => {
                in_quotes = true;
                quoted_field = true;
                record_started = true;
            }
            '"' => {
                return Err(format!(
                    "parse error on line {line}, column {column}: bare \" in non-quoted-field"
                ));
            }
            ',' => {
                record.push(std::mem::take(&mut field));
                quoted_field = false;
                record_started = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                if record_started || !field.is_empty() {
                    record.push(std::mem::take(&mut field));
                    out.push(std::mem::take(&mut record));
                }
                quoted_field = false;
                record_started = false;
                line += 1;
                column = 0;
            }
            c => {
                if quoted_field {
                    return Err(format!(
                        "parse error on line {line}, column {column}: extraneous or missing \" in quoted-field"
                    ));
                }
                field.push(c);
                record_started = true;
            }
        }
    }
    if in_quotes {
        return Err(format!(
            "parse error on line {line}, column {column}: extraneous or missing \" in quoted-field"
        ));
    }
    if record_started || !field.is_empty() {
        record.push(field);
        out.push(record);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_format_with_quoted_groups() {
        let file = TokenFile::parse(
            "token1,user1,uid1\n\ntoken2,user2,uid2,\"group1,group2\"\r\n\"tok,3\",\"user \"\"3\"\"\",uid3,solo\n",
            "tokens.csv",
        )
        .expect("a valid file");
        assert_eq!(file.len(), 3);
        let u = file.user("token2").expect("token2");
        assert_eq!(
            (u.name.as_str(), u.uid.as_str(), u.groups.clone()),
            (
                "user2",
                "uid2",
                vec!["group1".to_string(), "group2".to_string()]
            )
        );
        assert_eq!(
            file.user("token1").map(|u| u.groups.len()),
            Some(0),
            "no fourth column, no groups"
        );
        let u = file.user("tok,3").expect("a quoted token");
        assert_eq!(
            (u.name.as_str(), u.groups.clone()),
            ("user \"3\"", vec!["solo".to_string()])
        );
        assert!(file.user("token").is_none());
        assert!(file.user("").is_none());
    }

    #[test]
    fn short_records_refuse_the_file_and_empty_or_repeated_tokens_do_not() {
        assert_eq!(
            TokenFile::parse("token1,user1\n", "/etc/tokens.csv").err(),
            Some(
                "token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user uid), found 2"
                    .into()
            )
        );
        let file = TokenFile::parse(",nobody,0\nt,first,1\nt,second,2\n", "f").expect("valid");
        assert_eq!(file.len(), 1);
        assert_eq!(file.user("t").map(|u| u.name.as_str()), Some("second"));
        assert!(
            TokenFile::parse("a\"b,u,1\n", "f")
                .err()
                .is_some_and(|e| e.contains("bare \" in non-quoted-field"))
        );
        assert!(TokenFile::parse("\"open,u,1\n", "f").is_err());
        let bom = TokenFile::parse("\u{feff}t,u,1\n", "f").expect("valid");
        assert!(
            bom.user("t").is_some(),
            "a byte-order mark is not part of the token"
        );
        assert_eq!(
            format!("{bom:?}"),
            "TokenFile(1 tokens)",
            "no secret in Debug"
        );
    }
}
