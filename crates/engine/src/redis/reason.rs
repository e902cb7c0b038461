//! Why a Redis connection step failed, in one line and without the password.

/// A short, password-free reason for a failed connection step.
pub(crate) fn reason_of(e: &redis::RedisError, password: Option<&str>) -> String {
    let msg = e.to_string();
    let reason = if e.is_connection_refusal() {
        "connection refused".to_owned()
    } else if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_io_error() {
        // Already a reason (a TLS failure, what the Sentinels answered): kept as it is.
        msg.lines().next().unwrap_or("unknown error").to_owned()
    } else if e.code() == Some("WRONGPASS") {
        "wrong user or password (WRONGPASS)".to_owned()
    } else if e.code() == Some("NOAUTH") || msg.contains("NOAUTH") {
        "NOAUTH authentication required (no password given)".to_owned()
    } else if msg.contains("without any password configured") {
        "a password was given but the server has none configured (ERR AUTH)".to_owned()
    } else {
        msg.lines().next().unwrap_or("unknown error").to_owned()
    };
    match password {
        Some(pw) if !pw.is_empty() => reason.replace(pw, "****"),
        _ => reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_never_show_the_password() {
        let e = redis::RedisError::from((
            redis::ErrorKind::Io,
            "boom",
            "while sending hunter2".to_owned(),
        ));
        let r = reason_of(&e, Some("hunter2"));
        assert!(!r.contains("hunter2"), "{r}");
    }
}
