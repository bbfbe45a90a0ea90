//! **Shell reads**: a `bash` command whose only effect is to print one file,
//! or a slice of it (`cat F`, `sed -n '40,80p' F`, `head -n 50 F`,
//! `nl -ba F | sed -n '1,120p'`, after an optional `cd DIR &&`), is a read
//! of that file ([`tool_args::read_of`](super::tool_args::read_of)):
//! - in the cache layout the file is touched (it is being worked on), the
//!   output is one of its views, an identical re-print points at what
//!   already shows the text, a plain `cat` is the file's whole text, and a
//!   numbered listing of every line (`cat -n F`, `nl -ba F`) ends the
//!   file's view as a whole read does (the model can quote any line);
//! - observed (`observe_bash`), the file is indexed with its text and
//!   tracked, so a change to it reaches the model (it joins the pool; only
//!   `read` and `activate` make it active);
//! - a file on the secret list (or outside the workspace) is withheld from
//!   the stored and shown output, as from a `read` of it.
//!
//! Models that read through the shell (pi asks them to use `read`; not all
//! do, always) otherwise had their files treated as unknown: measured on the
//! two real sessions rewritten to read through `bash`, docs/benchmarks.md
//! ("Session 30").
//!
//! Deliberately narrow: one file, literal words (no `$`, globs, `~`, or
//! backslashes), and only the operators `cd DIR &&` before and one `|` into
//! a slicing `sed -n`/`head`/`tail`. Anything else is an ordinary command.

/// What a shell read prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRead {
    /// The file as the command names it, joined to the `cd` directory.
    pub path: String,
    /// The file's text exactly (`cat F`); otherwise a slice, or numbered
    /// lines (`cat -n`, `nl`): a part of the file, not its text.
    pub whole: bool,
    /// Every line of the file, numbered as `cat -n` and `nl -ba` print it
    /// (`{n:>6}<TAB>`): the whole text with numbers. The model can quote
    /// any line from it, so it ends a file's view as `cat F` does; the text
    /// is [`denumber`]ed back where the layout needs it.
    pub numbered: bool,
}

/// The file `command` prints, if that is all it does.
pub fn shell_read(command: &str) -> Option<ShellRead> {
    let words = words(command.trim())?;
    let mut rest: &[Word] = &words;
    let mut dir = None;
    if let [Word::Lit(cd), Word::Lit(d), Word::And, tail @ ..] = rest {
        if cd != "cd" {
            return None;
        }
        dir = Some(d.as_str());
        rest = tail;
    }
    let (reader, slicer) = match rest.iter().position(|w| *w == Word::Pipe) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let reader = lits(reader)?;
    let (file, mut whole, mut numbered) = reader_file(&reader)?;
    if let Some(s) = slicer {
        if !slice(&lits(s)?) {
            return None;
        }
        (whole, numbered) = (false, false);
    }
    let path = match dir {
        Some(d) if !file.starts_with('/') => format!("{}/{}", d.trim_end_matches('/'), file),
        _ => file.to_string(),
    };
    Some(ShellRead {
        path,
        whole,
        numbered,
    })
}

/// The file a reader prints, whether the output is its text whole, and
/// whether it is every line numbered (see [`ShellRead::numbered`]).
fn reader_file<'a>(w: &[&'a str]) -> Option<(&'a str, bool, bool)> {
    let (&prog, args) = w.split_first()?;
    let (&file, opts) = args.split_last()?;
    if file.starts_with('-') {
        return None;
    }
    let (whole, numbered) = match prog {
        "cat" => match opts {
            [] => (true, false),
            ["-n"] => (false, true),
            _ => return None,
        },
        // `nl -ba`, `nl -b a -w 4`: numbered lines; every line, as
        // `cat -n` prints them, only with `-ba` alone (plain `nl` leaves
        // blank lines unnumbered).
        "nl" => {
            let mut it = opts.iter();
            while let Some(o) = it.next() {
                match *o {
                    "-b" | "-w" | "-n" | "-s" | "-v" | "-i" => {
                        it.next()?;
                    }
                    o if o.starts_with('-') && o.len() > 2 => {}
                    _ => return None,
                }
            }
            (false, matches!(opts, ["-ba"] | ["-b", "a"]))
        }
        "sed" | "head" | "tail" if slice(&[&[prog], opts].concat()) => (false, false),
        _ => return None,
    };
    Some((file, whole, numbered))
}

/// The text of a numbered listing of a whole file (`cat -n F`,
/// `nl -ba F`): each line `{n:>6}<TAB>` then the file's line, `n` counting
/// from 1. None when a line is not so (the output was cut, or is not such
/// a listing): then it is no text of the file.
pub fn denumber(listing: &str) -> Option<String> {
    if listing.is_empty() {
        return Some(String::new()); // an empty file
    }
    let body = listing.strip_suffix('\n').unwrap_or(listing);
    let mut out = String::with_capacity(body.len());
    for (i, line) in body.split('\n').enumerate() {
        let rest = line.strip_prefix(&format!("{:>6}\t", i + 1))?;
        out.push_str(rest);
        out.push('\n');
    }
    if !listing.ends_with('\n') {
        out.pop();
    }
    Some(out)
}

/// A slicing `sed -n 'A,Bp'`, or `head`/`tail` with an optional line
/// count (its options only: the file, if any, is not in `w`).
fn slice(w: &[&str]) -> bool {
    let Some((&prog, opts)) = w.split_first() else {
        return false;
    };
    match (prog, opts) {
        ("sed", ["-n", script]) => sed_print(script),
        ("head" | "tail", []) => true,
        ("head" | "tail", ["-n", n]) => count(n),
        ("head" | "tail", [o]) => o
            .strip_prefix("-n")
            .filter(|n| !n.is_empty())
            .or_else(|| o.strip_prefix('-'))
            .is_some_and(count),
        _ => false,
    }
}

/// `A,Bp`, `Ap` or `A,$p` with line numbers.
fn sed_print(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match range.split_once(',') {
        Some((a, b)) => num(a) && (num(b) || b == "$"),
        None => num(range),
    }
}

/// A line count: `20`, or `+20` (tail from line 20).
fn count(n: &str) -> bool {
    let n = n.strip_prefix('+').unwrap_or(n);
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
}

#[derive(Debug, PartialEq, Eq)]
enum Word {
    Lit(String),
    And,
    Pipe,
}

fn lits(w: &[Word]) -> Option<Vec<&str>> {
    w.iter()
        .map(|w| match w {
            Word::Lit(s) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

/// Shell words with quotes removed; `None` for anything that expands,
/// globs, redirects or runs more than the shapes above.
fn words(s: &str) -> Option<Vec<Word>> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = s.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            ' ' | '\t' => {
                if let Some(w) = cur.take() {
                    out.push(Word::Lit(w));
                }
            }
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' => return None,
                        c => w.push(c),
                    }
                }
            }
            '&' | '|' => {
                if let Some(w) = cur.take() {
                    out.push(Word::Lit(w));
                }
                let op = if ch == '&' {
                    (chars.next() == Some('&')).then_some(Word::And)?
                } else if chars.peek() == Some(&'|') {
                    return None;
                } else {
                    Word::Pipe
                };
                out.push(op);
            }
            '$' | '`' | '\\' | '*' | '?' | '[' | '~' | '{' | ';' | '<' | '>' | '(' | ')' | '#'
            | '\n' | '\r' => return None,
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = cur.take() {
        out.push(Word::Lit(w));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(cmd: &str) -> Option<(String, bool)> {
        shell_read(cmd).map(|r| (r.path, r.whole))
    }

    #[test]
    fn numbered_listings_of_a_whole_file() {
        let numbered = |cmd: &str| shell_read(cmd).is_some_and(|r| r.numbered && !r.whole);
        for cmd in [
            "cat -n a.rs",
            "nl -ba a.rs",
            "nl -b a a.rs",
            "cd src && nl -ba a.rs",
        ] {
            assert!(numbered(cmd), "{cmd}");
        }
        for cmd in [
            "cat a.rs",
            "nl a.rs",
            "nl -ba -w 3 a.rs",
            "nl -ba a.rs | sed -n '1,120p'",
            "cat -n a.rs | head -n 40",
            "sed -n '1,$p' a.rs",
        ] {
            assert!(!numbered(cmd), "{cmd}");
        }
        assert_eq!(
            denumber("     1\tfn a() {\n     2\t\n     3\t}\n").as_deref(),
            Some("fn a() {\n\n}\n")
        );
        assert_eq!(denumber("     1\tx\n     2\ty").as_deref(), Some("x\ny"));
        assert_eq!(denumber("").as_deref(), Some(""));
        // Not counting from 1, a line without its number, another width.
        assert_eq!(denumber("     2\tx\n"), None);
        assert_eq!(denumber("     1\tx\ny\n"), None);
        assert_eq!(denumber("1\tx\n"), None);
    }

    #[test]
    fn prints_of_one_file_are_reads() {
        let whole = |p: &str| Some((p.to_string(), true));
        let part = |p: &str| Some((p.to_string(), false));
        assert_eq!(read("cat src/a.ts"), whole("src/a.ts"));
        assert_eq!(read("  cat 'my file.md' "), whole("my file.md"));
        assert_eq!(read("cat -n a.rs"), part("a.rs"));
        assert_eq!(read("sed -n '40,80p' a.rs"), part("a.rs"));
        assert_eq!(read("sed -n 12p a.rs"), part("a.rs"));
        assert_eq!(read("sed -n \"200,$p\" a.rs"), None, "$ in double quotes");
        assert_eq!(read("sed -n '200,$p' a.rs"), part("a.rs"));
        assert_eq!(read("head -n 50 README.md"), part("README.md"));
        assert_eq!(read("head -50 README.md"), part("README.md"));
        assert_eq!(read("tail -n +20 a.rs"), part("a.rs"));
        assert_eq!(read("tail a.rs"), part("a.rs"));
        assert_eq!(read("nl -ba a.rs | sed -n '1,120p'"), part("a.rs"));
        assert_eq!(read("nl -b a a.rs"), part("a.rs"));
        assert_eq!(read("cat a.rs | head -n 40"), part("a.rs"));
        assert_eq!(
            read("cd /w/pi && tail -30 packages/a.ts"),
            part("/w/pi/packages/a.ts")
        );
        assert_eq!(read("cd pkg/ && cat /etc/hosts"), whole("/etc/hosts"));
    }

    #[test]
    fn anything_more_is_an_ordinary_command() {
        for cmd in [
            "cat a b",
            "cat",
            "cat *.ts",
            "cat $F",
            "cat ~/.bashrc",
            "cat a > b",
            "cat a; rm a",
            "cat a || true",
            "cat a & cat b",
            "cat -A a",
            "cat a | grep x",
            "cat a | sed 's/x/y/'",
            "sed -i '' 's/a/b/' a.rs",
            "sed -n '/foo/p' a.rs",
            "sed -n '1,5p;9p' a.rs",
            "head -c 100 a.rs",
            "grep -n x a.rs",
            "cd a && cd b && cat c",
            "ls && cat a",
            "cat a && ls",
            "cat 'unterminated",
            "cat a\nrm b",
            "cat `x`",
            "nl -ba a.rs | sed -n '1,5p' | head",
            "echo hi",
            "",
        ] {
            assert_eq!(read(cmd), None, "{cmd:?}");
        }
    }
}
