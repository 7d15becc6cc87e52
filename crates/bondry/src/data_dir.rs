//! The data directory: private to Bondry's user. It holds realm keys, the pin store and
//! the admin token, so it is made 0700 and every file Bondry writes in it 0600, whatever
//! the umask; one made looser by someone else is used, with a warning.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Makes `data_dir` (and its missing parents) 0700, or warns when the existing one can be
/// read or entered by others than its owner.
pub fn prepare(data_dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(data_dir) {
        Ok(meta) if !meta.is_dir() => anyhow::bail!("{}: data_dir is not a directory", data_dir.display()),
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    path = %data_dir.display(),
                    mode = format!("{mode:o}"),
                    "data_dir is open to others than its owner, and it holds keys and pins; chmod 700 it"
                );
            }
            Ok(())
        }
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(data_dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot make the data directory ({e})", data_dir.display())),
    }
}

/// Makes the file at `path`, if there is one, readable by its owner only, saying so when
/// it was not: a pin store or token left by an older Bondry or another umask.
pub fn keep_private(path: &Path) -> std::io::Result<()> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        tracing::warn!(path = %path.display(), was = format!("{mode:o}"), "a file of data_dir was open to others; it is 0600 now");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_data_directory_is_private_and_a_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("a/state");
        prepare(&data_dir).unwrap();
        assert_eq!(std::fs::metadata(&data_dir).unwrap().permissions().mode() & 0o777, 0o700);
        prepare(&data_dir).unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(prepare(&file).unwrap_err().to_string().ends_with("data_dir is not a directory"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        keep_private(&file).unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        keep_private(&dir.path().join("absent")).unwrap();
    }
}
