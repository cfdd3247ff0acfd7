//! `toolhost keygen NAME` and `toolhost sign FILE`: a vendor's key pair and
//! signatures, in the format `toolhost::supply::signature` verifies.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use toolhost::supply::signature;

pub fn keygen(dir: &Path, name: &str) -> Result<ExitCode> {
    let (secret, public) = signature::keygen(dir, name)?;
    crate::say!("secret key: {} (keep it private)", secret.display())?;
    crate::say!(
        "public key: {} (users trust it with `[trust] keys = {{ {name} = \"{}\" }}` in toolhost.toml)",
        public.display(),
        public.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn sign(file: &Path, key: &Path, detached: bool) -> Result<ExitCode> {
    let written = signature::sign(file, key, detached)?;
    match detached {
        true => crate::say!("signed {}: signature in {}", file.display(), written.display())?,
        false => crate::say!("signed {} (signature embedded)", file.display())?,
    }
    Ok(ExitCode::SUCCESS)
}
