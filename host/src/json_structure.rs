//! The structure of JSON text, read before or instead of parsing it: which
//! bytes are brackets and commas (outside strings, escapes understood) and
//! how deep each one sits. Owns only that scan; what is done with it (a
//! cap checked before parsing, a document cut short mended) is its
//! callers'.

/// Calls `each` with every byte of `text` outside its strings, its index
/// and the nesting depth after it.
pub fn scan(text: &str, mut each: impl FnMut(usize, u8, usize)) {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        each(i, b, depth);
    }
}
