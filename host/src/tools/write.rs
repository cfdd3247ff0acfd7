//! `write` and `edit`: the native tools that change files, served only when
//! the configuration says `writable = true`. Both reach the file through the
//! root's directory handles and replace it whole ([`Root::write`]), so they
//! stay inside the root and a reader never sees half a file. Neither reads
//! nor makes a file over [`MAX_FILE_BYTES`]; an edit's size is known before
//! it is built, so replacing every `x` with a long text is refused unbuilt.

use serde_json::{Map, Value, json};

use super::{CallOutput, Root, ToolError, result, str_arg};
use crate::bounds::native::MAX_FILE_BYTES;

pub fn write(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let given = str_arg(args, "path")?;
    let content = str_arg(args, "content")?;
    let written = root.write(given, content.as_bytes())?;
    let shown = Root::display(&written.path);
    let verb = if written.created { "created" } else { "overwrote" };
    Ok(result(
        format!("{verb} {shown} ({} bytes)", content.len()),
        json!({"path": shown, "bytes": content.len(), "created": written.created}),
    ))
}

/// Replace the one occurrence of `old_string` with `new_string` (every one
/// with `replace_all`); refused if it is missing, or ambiguous.
pub fn edit(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let given = str_arg(args, "path")?;
    let old = str_arg(args, "old_string")?;
    let new = str_arg(args, "new_string")?;
    let all = args.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
    if old.is_empty() {
        return Err(ToolError::InvalidArgs("old_string: must not be empty".into()));
    }
    let text = root.read_to_string(given)?;
    let count = text.matches(old).count();
    match count {
        0 => {
            return Err(ToolError::InvalidArgs(format!(
                "old_string: not found in {given}"
            )));
        }
        n if n > 1 && !all => {
            return Err(ToolError::InvalidArgs(format!(
                "old_string: found {n} times in {given}; give more context or set replace_all"
            )));
        }
        _ => {}
    }
    let replaced = if all { count } else { 1 };
    let size = (text.len() - replaced * old.len()).saturating_add(replaced.saturating_mul(new.len()));
    if size as u64 > MAX_FILE_BYTES {
        return Err(ToolError::InvalidArgs(format!(
            "new_string: the edit would make {given} {size} bytes, over the {} MiB file limit",
            MAX_FILE_BYTES >> 20
        )));
    }
    let updated = if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    let written = root.write(given, updated.as_bytes())?;
    let shown = Root::display(&written.path);
    Ok(result(
        format!("edited {shown}: {count} replacement(s)"),
        json!({"path": shown, "replacements": count}),
    ))
}
