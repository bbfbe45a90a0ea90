//! Best-effort path extraction from discovery output (memory-system-v0 §18.1:
//! "do not build a fragile parser"). Candidates are only strings; the session
//! keeps those that exist as regular files.

/// Longest line or token considered a path.
const MAX_PATH_LEN: usize = 4096;
/// Bounds on the work done per output.
pub const MAX_CANDIDATES: usize = 2000;
const MAX_BASH_TOKENS: usize = 500;

fn plausible(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_PATH_LEN
        && !s.ends_with('/')
        && !s.chars().any(char::is_control)
}

/// `path:12:` / `path-12-` (grep/rg match and context lines) → `path`.
fn grep_prefix(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b':' || b == b'-') && i > 0 {
            let rest = &bytes[i + 1..];
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && rest.get(digits) == Some(&b) {
                return Some(&line[..i]);
            }
        }
    }
    None
}

/// Candidate paths in the output of `ls`, `find` or `grep` (and their usual
/// stand-ins `fd`, `rg`). Relative candidates are relative to the directory
/// the tool listed or searched.
pub fn extract_paths(tool: &str, output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if plausible(s) && out.len() < MAX_CANDIDATES && !out.iter().any(|x| x == s) {
            out.push(s.to_string());
        }
    };
    for line in output.lines() {
        let line = line.trim_end();
        match tool {
            "ls" => {
                push(line);
                // `ls -l` style: the name is the last field.
                if let Some(last) = line.split_whitespace().last() {
                    push(last);
                }
            }
            "grep" | "rg" => push(grep_prefix(line).unwrap_or(line)),
            "find" | "fd" => push(line),
            _ => {
                if let Some(p) = grep_prefix(line) {
                    push(p);
                }
                push(line);
            }
        }
    }
    out
}

/// What an `ls <dir>…` command listed: the names it printed, joined to the
/// directory they are in (`ls docs` printing `guide.md` → `docs/guide.md`),
/// and the text left for ordinary tokenising.
struct LsListing<'a> {
    paths: Vec<String>,
    /// Text not taken as the listing (the `ls` line itself, other lines).
    rest: Vec<&'a str>,
}

/// A bash call whose first line is a plain `ls [options] dir…` (no pipe,
/// redirection or second command on that line). The listing is `output`;
/// when the caller passed none, the lines after the command (a caller that
/// gives command and output as one string) that hold one name each. With
/// several directories, `dir:` header lines switch the directory. A name
/// equal to an argument (`ls docs/a.md` prints `docs/a.md`) stays as it is.
fn ls_listing<'a>(command: &'a str, output: &'a str) -> Option<LsListing<'a>> {
    let (first, after) = command.split_once('\n').unwrap_or((command, ""));
    let mut words = first.split_whitespace();
    if words.next() != Some("ls") || first.contains(['|', ';', '&', '>', '<', '`', '$']) {
        return None;
    }
    let args: Vec<&str> = words.filter(|w| !w.starts_with('-')).collect();
    if args.is_empty() {
        // `ls` of the working directory: names resolve against it anyway.
        return None;
    }
    let mut rest = vec![first];
    let listing: Vec<&str> = if output.trim().is_empty() {
        let mut names = Vec::new();
        for line in after.lines() {
            let t = line.trim();
            if t.is_empty()
                || t.contains(char::is_whitespace)
                || args.len() == 1 && t.ends_with(':')
            {
                rest.push(line);
            } else {
                names.push(t);
            }
        }
        names
    } else {
        output.lines().collect()
    };
    let mut dir = (args.len() == 1).then(|| args[0]);
    let mut paths: Vec<String> = Vec::new();
    for line in listing {
        let line = line.trim();
        if line.is_empty() || line.starts_with("total ") {
            continue;
        }
        if let Some(header) = line.strip_suffix(':') {
            if args.contains(&header) {
                dir = Some(header);
                continue;
            }
        }
        // `ls -l` style (mode, links, owner, group, size, date ×3, name): the
        // name is the last field; otherwise the line is the name.
        let name = if line.split_whitespace().count() >= 9 {
            line.split_whitespace().last().unwrap_or("")
        } else {
            line
        };
        if !plausible(name) || name == "." || name == ".." {
            continue;
        }
        let full = if name.starts_with('/') || args.contains(&name) {
            name.to_string()
        } else if let Some(d) = dir {
            format!("{}/{name}", d.trim_end_matches('/'))
        } else {
            continue;
        };
        if paths.len() < MAX_BASH_TOKENS && !paths.contains(&full) {
            paths.push(full);
        }
    }
    Some(LsListing { paths, rest })
}

/// Tokens of a shell command (and its output) that look like file paths.
/// The output of an `ls <dir>` is read as a listing of that directory (see
/// [`ls_listing`]), not as paths relative to the working directory.
pub fn bash_tokens(command: &str, output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let listing = ls_listing(command, output);
    let sources: Vec<&str> = match &listing {
        Some(ls) => {
            out.extend(ls.paths.iter().cloned());
            ls.rest.clone()
        }
        None => vec![command, output],
    };
    let is_sep = |c: char| c.is_whitespace() || ";|&<>()'\"`=,".contains(c);
    for raw in sources.iter().flat_map(|s| s.split(is_sep)) {
        if out.len() >= MAX_BASH_TOKENS {
            break;
        }
        let t = grep_prefix(raw).unwrap_or(raw);
        let t = t.trim_end_matches([':', '.', ',', ';']);
        if t.starts_with('-')
            || t.contains("://")
            || !(t.contains('/') || t.contains('.'))
            || !plausible(t)
            || t == "."
            || t == ".."
        {
            continue;
        }
        if !out.iter().any(|x| x == t) {
            out.push(t.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ls_find_grep_lines() {
        assert_eq!(
            extract_paths("ls", "a.ts\nsub/\n(empty)\n"),
            vec!["a.ts", "(empty)"]
        );
        assert_eq!(
            extract_paths("find", "src/a.ts\n\nsrc/b.ts"),
            vec!["src/a.ts", "src/b.ts"]
        );
        assert_eq!(
            extract_paths(
                "grep",
                "src/a.ts:12: let x = 1;\nsrc/b-c.ts-3- ctx\nplain.txt"
            ),
            vec!["src/a.ts", "src/b-c.ts", "plain.txt"]
        );
    }

    #[test]
    fn bash_tokens_look_like_paths() {
        let t = bash_tokens(
            "cat src/a.ts | grep -n foo > out.txt",
            "src/b.rs:3: x\nhttp://x.y/z",
        );
        assert_eq!(t, vec!["src/a.ts", "out.txt", "src/b.rs"]);
    }

    #[test]
    fn an_ls_listing_is_joined_to_the_directory_listed() {
        // Command and output as one string (the drop-in's bash hook).
        assert_eq!(bash_tokens("ls docs\nguide.md", ""), vec!["docs/guide.md"]);
        // Apart, with options, `ls -l` lines and a trailing slash.
        assert_eq!(
            bash_tokens(
                "ls -la docs/",
                "total 8\n-rw-r--r-- 1 u u 7 Nov 24 12:00 guide.md\nsub"
            ),
            vec!["docs/guide.md", "docs/sub"]
        );
        // Several directories: `dir:` headers switch.
        assert_eq!(
            bash_tokens("ls docs src", "docs:\na.md\n\nsrc:\nb.rs"),
            vec!["docs/a.md", "src/b.rs"]
        );
        // A file argument is printed as given.
        assert_eq!(bash_tokens("ls docs/a.md", "docs/a.md"), vec!["docs/a.md"]);
        // Not a plain ls: ordinary tokens.
        assert_eq!(bash_tokens("ls docs | head", "guide.md"), vec!["guide.md"]);
        assert_eq!(bash_tokens("ls", "guide.md"), vec!["guide.md"]);
        // Later command lines are still tokenised.
        assert_eq!(bash_tokens("ls docs\ncat src/x.rs", ""), vec!["src/x.rs"]);
    }
}
