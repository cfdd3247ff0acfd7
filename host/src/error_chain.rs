//! An error and its causes as one line of text, as a user is shown it.
//! Transport errors put the useful part ("connection refused", "dns error")
//! in a cause, and many errors also say their cause in their own message:
//! each cause is said once. Owns only this rendering.

/// `error` and each of its causes, joined by `: `, a cause left out where
/// the text before already says it (printed twice otherwise: `No such file
/// or directory (os error 2): No such file or directory (os error 2)`).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let said = error.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = error.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading a.txt")]
    struct Reading(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("reading a.txt: {0}")]
    struct SaysItsCause(#[source] std::io::Error);

    #[test]
    fn each_cause_is_said_once() {
        let missing = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let expected = format!("reading a.txt: {}", missing());
        assert_eq!(error_chain(&Reading(missing())), expected);
        assert_eq!(error_chain(&SaysItsCause(missing())), expected);
    }
}
