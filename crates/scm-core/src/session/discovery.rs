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

/// Tokens of a shell command (and its output) that look like file paths.
pub fn bash_tokens(command: &str, output: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let is_sep = |c: char| c.is_whitespace() || ";|&<>()'\"`=,".contains(c);
    for raw in command.split(is_sep).chain(output.split(is_sep)) {
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
}
