//! Reading the tool's input text: a file or standard input, checked to be UTF-8 with the
//! position of the first invalid byte named by line and column.

use std::io::Read;

/// Reads `path` (standard input when `None` or `-`) and returns `(name, text)`, where `name`
/// is how error messages refer to the input. Errors are complete one-line messages.
pub fn read_text(path: Option<&str>) -> Result<(String, String), String> {
    let (name, bytes) = match path {
        None | Some("-") => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| format!("standard input: {e}"))?;
            ("standard input".to_owned(), bytes)
        }
        Some(p) => (
            p.to_owned(),
            std::fs::read(p).map_err(|e| format!("{p}: {e}"))?,
        ),
    };
    let text = utf8(bytes).map_err(|e| format!("{name}: {e}"))?;
    Ok((name, text))
}

/// Decodes UTF-8; the error names the 1-based line and the 1-based byte column of the first
/// byte that is not valid UTF-8.
pub fn utf8(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..valid];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        format!(
            "line {line}, column {}: not valid UTF-8 (byte 0x{:02x})",
            valid - line_start + 1,
            e.as_bytes()[valid]
        )
    })
}

#[cfg(test)]
mod tests {
    use super::utf8;

    #[test]
    fn names_line_and_column_of_the_first_bad_byte() {
        assert_eq!(utf8(b"ok\n".to_vec()).unwrap(), "ok\n");
        assert_eq!(
            utf8(b"{}\n{\"content\":\"a\xff\"}\n".to_vec()).unwrap_err(),
            "line 2, column 14: not valid UTF-8 (byte 0xff)"
        );
        assert_eq!(
            utf8(b"\xc3".to_vec()).unwrap_err(),
            "line 1, column 1: not valid UTF-8 (byte 0xc3)"
        );
        // A multi-byte character before the bad byte counts its bytes.
        assert_eq!(
            utf8("é".bytes().chain([0x80]).collect()).unwrap_err(),
            "line 1, column 3: not valid UTF-8 (byte 0x80)"
        );
    }
}
