//! Filesystem resolver (SSOT §5.2–5.4, implementation-plan §3): forward and
//! reverse translation, mounts, lexical `..`, symlinks, watchability, and
//! identity across processes and filesystems.

use std::path::{Path, PathBuf};

use scm_core::fs::resolver::{default_filesystem_id, MountMapping, Resolver};
use scm_core::model::hashing::sha256_hex;
use scm_core::model::FilesystemSource;

const HOST: &str = "fs-host";
const SANDBOX: &str = "fs-sandbox";

fn mount(agent: &str, canonical: &str, fs: &str, host: Option<&str>) -> MountMapping {
    MountMapping {
        agent_prefix: agent.into(),
        canonical_prefix: canonical.into(),
        filesystem_id: fs.into(),
        host_prefix: host.map(String::from),
    }
}

/// A sandboxed agent: its own filesystem is not reachable from here; two
/// bind mounts are (the longer one on another filesystem id).
fn sandbox() -> Resolver {
    Resolver::new(
        SANDBOX.into(),
        PathBuf::from("/work"),
        vec![
            mount(
                "/work",
                "/home/u/proj",
                HOST,
                Some("/nonexistent-host/proj"),
            ),
            mount("/work/vendor/lib", "/srv/lib", "fs-nfs", None),
        ],
        false,
    )
}

fn src(fs: &str, path: &str) -> FilesystemSource {
    FilesystemSource {
        filesystem_id: fs.into(),
        path: path.into(),
    }
}

#[test]
fn default_filesystem_id_is_sha256_of_machine_id() {
    let id = default_filesystem_id();
    assert_eq!(id.len(), 64);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    if let Ok(machine) = std::fs::read_to_string("/etc/machine-id") {
        if !machine.trim().is_empty() {
            assert_eq!(id, sha256_hex(machine.trim().as_bytes()));
        }
    }
    assert_eq!(id, default_filesystem_id(), "stable across calls");
}

#[test]
fn mounts_sort_longest_agent_prefix_first() {
    let r = sandbox();
    assert_eq!(r.mounts[0].agent_prefix, "/work/vendor/lib");
    assert_eq!(r.mounts[1].agent_prefix, "/work");
}

#[test]
fn relative_paths_join_the_workspace_root_and_dots_normalise_lexically() {
    let r = sandbox();
    for (input, canonical) in [
        ("src/a.ts", "/home/u/proj/src/a.ts"),
        ("./src/../src/./a.ts", "/home/u/proj/src/a.ts"),
        ("/work//src///a.ts", "/home/u/proj/src/a.ts"),
        ("/work/src/", "/home/u/proj/src"),
        ("/work", "/home/u/proj"),
    ] {
        let got = r.resolve(input).unwrap();
        assert_eq!(got.source, src(HOST, canonical), "{input}");
    }
    // `..` leaves the mount: back on the sandbox's own filesystem.
    assert_eq!(
        r.resolve("../etc/passwd").unwrap().source,
        src(SANDBOX, "/etc/passwd")
    );
    // ... and never climbs above `/`.
    assert_eq!(
        r.resolve("/../../../etc/x").unwrap().source,
        src(SANDBOX, "/etc/x")
    );
    assert_eq!(
        r.resolve("../../../../..").unwrap().source,
        src(SANDBOX, "/")
    );
}

#[test]
fn mount_prefixes_match_on_component_boundaries_longest_first() {
    let r = sandbox();
    // `/work` must not capture `/workspace`.
    let ws = r.resolve("/workspace/a.ts").unwrap();
    assert_eq!(ws.source, src(SANDBOX, "/workspace/a.ts"));
    assert!(!ws.watchable && ws.host_path.is_none());

    let lib = r.resolve("/work/vendor/lib/x.c").unwrap();
    assert_eq!(lib.source, src("fs-nfs", "/srv/lib/x.c"));
    assert!(!lib.watchable, "no host path: not watchable");
    // `/work/vendor/library` is under `/work`, not `/work/vendor/lib`.
    assert_eq!(
        r.resolve("/work/vendor/library/x").unwrap().source,
        src(HOST, "/home/u/proj/vendor/library/x")
    );

    let main = r.resolve("/work/src/main.rs").unwrap();
    assert_eq!(
        main.host_path.as_deref(),
        Some(Path::new("/nonexistent-host/proj/src/main.rs"))
    );
    assert!(main.watchable);
}

#[test]
fn reverse_translation_agent_display_and_host_paths() {
    let r = sandbox();
    let s = src(HOST, "/home/u/proj/src/a.ts");
    assert_eq!(r.agent_path(&s), "/work/src/a.ts");
    assert_eq!(r.display_path(&s), "src/a.ts");
    assert_eq!(
        r.host_path(&s),
        Some(PathBuf::from("/nonexistent-host/proj/src/a.ts"))
    );
    assert!(r.is_watchable(&s));

    let root = src(HOST, "/home/u/proj");
    assert_eq!(r.agent_path(&root), "/work");
    assert_eq!(r.display_path(&root), ".");

    let lib = src("fs-nfs", "/srv/lib/x.c");
    assert_eq!(r.agent_path(&lib), "/work/vendor/lib/x.c");
    assert_eq!(r.display_path(&lib), "vendor/lib/x.c");
    assert_eq!(r.host_path(&lib), None);

    let etc = src(SANDBOX, "/etc/hosts");
    assert_eq!(r.agent_path(&etc), "/etc/hosts");
    assert_eq!(r.display_path(&etc), "/etc/hosts");
    assert_eq!(r.host_path(&etc), None, "sandbox-internal: unreachable");

    // Same canonical path on a filesystem nobody maps: shown as is.
    let other = src("fs-unknown", "/home/u/proj/a.ts");
    assert_eq!(r.agent_path(&other), "/home/u/proj/a.ts");
    assert_eq!(r.host_path(&other), None);

    // Round trip for every mapped path.
    for p in ["/work/a", "/work/vendor/lib/b/c", "/tmp/x", "/work"] {
        let resolved = r.resolve(p).unwrap();
        assert_eq!(r.agent_path(&resolved.source), p);
    }
}

#[test]
fn host_paths_resolve_back_through_mounts() {
    let r = sandbox();
    let back = r
        .resolve_host_path(Path::new("/nonexistent-host/proj/src/b.ts"))
        .unwrap();
    assert_eq!(back.source, src(HOST, "/home/u/proj/src/b.ts"));
    assert_eq!(r.resolve_host_path(Path::new("/elsewhere/x")), None);
}

#[test]
fn bad_paths_are_coded_errors() {
    let r = sandbox();
    assert_eq!(r.resolve("").unwrap_err().code(), "INVALID_ARGUMENT");
    assert_eq!(r.resolve("a\0b").unwrap_err().code(), "INVALID_ARGUMENT");
}

fn local(root: &Path) -> Resolver {
    Resolver::new(HOST.into(), root.to_path_buf(), vec![], true)
}

#[test]
fn local_default_filesystem_is_reachable_and_watchable() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let r = local(&root);
    let got = r.resolve("a.txt").unwrap();
    let expected = root.join("a.txt");
    assert_eq!(got.source, src(HOST, expected.to_str().unwrap()));
    assert_eq!(got.host_path.as_deref(), Some(expected.as_path()));
    assert!(got.watchable);
    assert_eq!(r.display_path(&got.source), "a.txt");
    // A path that does not exist resolves lexically.
    let missing = r.resolve("no/such/dir/../file").unwrap();
    assert_eq!(
        missing.source.path,
        root.join("no/such/file").to_str().unwrap()
    );
}

#[test]
fn symlinked_directories_canonicalise_but_a_symlinked_file_keeps_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join("real")).unwrap();
    std::fs::write(root.join("real/a.ts"), "x").unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    std::os::unix::fs::symlink(root.join("real/a.ts"), root.join("real/alias.ts")).unwrap();
    let r = local(&root);

    let via_real = r.resolve("real/a.ts").unwrap();
    let via_link = r.resolve("link/a.ts").unwrap();
    assert_eq!(via_real.source, via_link.source, "one file, one identity");
    assert_eq!(
        via_link.source.path,
        root.join("real/a.ts").to_str().unwrap()
    );
    assert_eq!(
        via_real.source.file_object_id(),
        via_link.source.file_object_id()
    );

    // The symlinked file itself keeps its own name (atomic saves replace it).
    let alias = r.resolve("link/alias.ts").unwrap();
    assert_eq!(
        alias.source.path,
        root.join("real/alias.ts").to_str().unwrap()
    );

    // A workspace root reached through a symlink still displays relative.
    let r2 = local(&root.join("link"));
    let a = r2.resolve("a.ts").unwrap();
    assert_eq!(a.source.path, root.join("real/a.ts").to_str().unwrap());
    assert_eq!(r2.display_path(&a.source), "a.ts");
}

#[test]
fn symlinks_inside_a_mount_stay_in_the_mount_or_fall_back_to_lexical() {
    let dir = tempfile::tempdir().unwrap();
    let host = std::fs::canonicalize(dir.path()).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(host.join("real")).unwrap();
    std::os::unix::fs::symlink(host.join("real"), host.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), host.join("escape")).unwrap();
    let r = Resolver::new(
        SANDBOX.into(),
        PathBuf::from("/work"),
        vec![mount("/work", "/canon", HOST, host.to_str())],
        false,
    );
    assert_eq!(
        r.resolve("/work/link/f").unwrap().source,
        src(HOST, "/canon/real/f")
    );
    // Resolving would leave the mount: keep the lexical path.
    assert_eq!(
        r.resolve("/work/escape/f").unwrap().source,
        src(HOST, "/canon/escape/f")
    );
}

#[test]
fn same_path_on_different_filesystems_is_a_different_object() {
    let a = Resolver::new("fs-a".into(), PathBuf::from("/w"), vec![], false);
    let b = Resolver::new("fs-b".into(), PathBuf::from("/w"), vec![], false);
    let ia = a.resolve("x.ts").unwrap().source.file_object_id();
    let ib = b.resolve("x.ts").unwrap().source.file_object_id();
    assert_ne!(ia, ib);
    assert_eq!(ia, a.resolve("/w/./x.ts").unwrap().source.file_object_id());
}

/// Run by `identity_is_equal_across_processes` in a child process.
#[test]
fn child_prints_identity() {
    let Ok(path) = std::env::var("SCM_RESOLVER_CHILD_PATH") else {
        return; // only meaningful in the child
    };
    let root = std::env::var("SCM_RESOLVER_CHILD_ROOT").unwrap();
    let r = Resolver::new(default_filesystem_id(), PathBuf::from(root), vec![], true);
    println!(
        "IDENTITY={}",
        r.resolve(&path).unwrap().source.file_object_id()
    );
}

#[test]
fn identity_is_equal_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.ts"), "x").unwrap();
    let here = Resolver::new(default_filesystem_id(), root.clone(), vec![], true)
        .resolve("src/a.ts")
        .unwrap()
        .source
        .file_object_id();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_prints_identity",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SCM_RESOLVER_CHILD_PATH", root.join("src/./a.ts"))
        .env("SCM_RESOLVER_CHILD_ROOT", "/")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    // The harness may print the test name on the same line.
    let child = stdout
        .split("IDENTITY=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no identity in child output: {stdout}"));
    assert_eq!(child, here);
}
