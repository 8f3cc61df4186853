//! Finding the workspace's git state, which every sandboxed command does twice (before,
//! to bind each `.git` read-only; after, to set aside one it made): a walk of every
//! folder. Measured on a workspace of 20,000 files in 2,000 folders with 3 nested
//! repositories, the size of a mid-sized project with its dependencies checked out.
//! Goal: under 50 ms a walk, so a command costs at most a tenth of a second more.

use criterion::{Criterion, criterion_group, criterion_main};
use scratchpad::tools::sandbox::GitState;

const FOLDERS: usize = 2_000;
const FILES_PER_FOLDER: usize = 10;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary folder");
    for folder in 0..FOLDERS {
        let place = dir.path().join(format!("m{}/p{}/f{folder}", folder % 7, folder % 50));
        std::fs::create_dir_all(&place).expect("folder");
        for file in 0..FILES_PER_FOLDER {
            std::fs::write(place.join(format!("file{file}.rs")), "fn main() {}\n").expect("file");
        }
    }
    for nested in ["m1/p1/f1/.git/hooks", "m2/p2/f2/.git/hooks", ".git/hooks"] {
        std::fs::create_dir_all(dir.path().join(nested)).expect("repository");
    }
    dir
}

fn bench(c: &mut Criterion) {
    let dir = workspace();
    assert_eq!(GitState::of(dir.path()).protected().len(), 3);
    c.bench_function("git_state/20000_files", |b| b.iter(|| GitState::of(dir.path())));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
