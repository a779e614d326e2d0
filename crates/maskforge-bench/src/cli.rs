//! Command-line helpers shared by the profiling programs in `src/bin/`.

use std::path::PathBuf;

/// Removes `flag VALUE` from `args` and returns the value.
pub fn take_flag(args: &mut Vec<String>, flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    let v = args.get(i + 1).cloned();
    args.drain(i..(i + 2).min(args.len()));
    v
}

/// The `.json` files named by `paths`: files as given, folders expanded (sorted by name).
pub fn json_files(paths: &[String]) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for a in paths {
        let p = PathBuf::from(a);
        if p.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(&p)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
            v.retain(|p| p.extension().is_some_and(|x| x == "json"));
            v.sort();
            files.extend(v);
        } else {
            files.push(p);
        }
    }
    Ok(files)
}
