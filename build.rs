//! Records the git revision for raw-file headers (`unknown` outside a git checkout).
fn main() {
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(rev) = rev {
        println!("cargo:rustc-env=LAYA_BENCH_GIT_REVISION={rev}");
    }
    // Rerun when HEAD moves: HEAD itself, and the branch file it points to (in a worktree the
    // git dir is elsewhere; ask git where).
    let git_dir = std::process::Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(dir) = git_dir {
        let head = dir.join("HEAD");
        println!("cargo:rerun-if-changed={}", head.display());
        if let Ok(text) = std::fs::read_to_string(&head) {
            if let Some(r) = text.trim().strip_prefix("ref: ") {
                println!("cargo:rerun-if-changed={}", dir.join(r).display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
