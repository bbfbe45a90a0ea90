//! Secrets in tool output and commands, redacted before they are stored.
//!
//! A file on the secret list is never read into the store
//! ([`crate::fs::secrets`]), but its bytes can still reach a tool's output —
//! `cat .env`, `env`, `grep -r TOKEN .`, `docker inspect` — or a command the
//! model wrote (`curl -H "Authorization: Bearer sk-…"`). The toolcall object
//! would keep them forever, in a store other sessions search. So before a
//! tool's output or a `bash` command is stored (and shown: the layouts render
//! what is stored), [`redact`] replaces:
//! - private key blocks (`-----BEGIN … PRIVATE KEY-----` to its `-----END`);
//! - tokens with a published prefix: AWS access key ids, GitHub, GitLab,
//!   Slack, npm, Stripe, Google API keys, `sk-…` API keys (OpenAI,
//!   Anthropic), JSON web tokens;
//! - the password in a URL (`postgres://app:[redacted]@db/app`);
//! - the value of an assignment whose name says it is a secret
//!   (`…PASSWORD`, `…SECRET…`, `…TOKEN`, `API_KEY`, `…CREDENTIAL…`): in
//!   `NAME=value` form at a line start (dotenv, `env`, shell, compose lists),
//!   or as a quoted literal of 8+ characters without spaces anywhere
//!   (`"apiKey": "…"`, `password = '…'`).
//!
//! Each span becomes `[redacted: <what>]`. The rules favour precision: a
//! redacted line of source code is a line the model cannot quote in an edit,
//! so references (`$TOKEN`, `process.env.X`, `${{ secrets.X }}`), numbers
//! and short values are left alone. A `read` of an indexed file is not
//! redacted (its file object holds the same text, and an edit must quote it
//! exactly); a read of a withheld file is replaced whole upstream.

/// `text` with the secrets above replaced, or `None` when it has none.
pub fn redact(text: &str) -> Option<String> {
    // Cheap exit for the common case: no marker any rule starts from.
    if !might_hold_secret(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut in_key = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let end = &line[body.len()..];
        if in_key {
            // The key's lines collapse into the one marker line.
            if body.contains("-----END") {
                in_key = false;
                out.push_str(line);
            } else if body.trim().is_empty() {
                out.push_str(end);
            }
            continue;
        }
        if let Some(head) = pem_begin(body) {
            changed = true;
            out.push_str(&body[..head]);
            // The whole key on one line (a JSON string with `\n` escapes, as
            // in a cloud service account's credentials file).
            if let Some(tail) = body[head..].find("-----END").map(|t| head + t) {
                out.push_str("[redacted: private key]");
                out.push_str(&body[tail..]);
                out.push_str(end);
                continue;
            }
            in_key = true;
            out.push_str(if end.is_empty() { "\n" } else { end });
            out.push_str("[redacted: private key]");
            out.push_str(if end.is_empty() { "\n" } else { end });
            continue;
        }
        match redact_line(body) {
            Some(r) => {
                out.push_str(&r);
                changed = true;
            }
            None => out.push_str(body),
        }
        out.push_str(end);
    }
    changed.then_some(out)
}

/// Substrings one of the rules needs (case-insensitive where the rule is).
fn might_hold_secret(text: &str) -> bool {
    const MARKERS: &[&str] = &[
        "PRIVATE KEY",
        "AKIA",
        "ASIA",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xox",
        "sk-",
        "sk_",
        "rk_",
        "npm_",
        "AIza",
        "eyJ",
        "://",
    ];
    if MARKERS.iter().any(|m| text.contains(m)) {
        return true;
    }
    // Without lower-casing the whole text: most output has none of these.
    SECRET_WORDS
        .iter()
        .chain(&["token"])
        .any(|w| contains_ignore_case(text.as_bytes(), w.as_bytes()))
}

/// Whether `hay` contains `needle` (lower-case ASCII), ignoring ASCII case.
fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| {
        w.iter()
            .zip(needle)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
    })
}

/// Where a PEM private key's BEGIN marker (`-----BEGIN … PRIVATE KEY-----`)
/// in `line` ends, if it has one.
fn pem_begin(line: &str) -> Option<usize> {
    let i = line.find("-----BEGIN ")? + 11;
    let e = line[i..].find("-----")?;
    line[i..i + e].ends_with("PRIVATE KEY").then_some(i + e + 5)
}

/// One line's secrets replaced, if it has any.
fn redact_line(line: &str) -> Option<String> {
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    tokens(line, &mut spans);
    url_password(line, &mut spans);
    assignment(line, &mut spans);
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (s, e, what) in spans {
        if s < at {
            continue; // overlaps a span already replaced
        }
        out.push_str(&line[at..s]);
        out.push_str("[redacted: ");
        out.push_str(what);
        out.push(']');
        at = e;
    }
    out.push_str(&line[at..]);
    Some(out)
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Tokens with a published prefix: (prefix, extra allowed bytes, minimum
/// length after the prefix, what).
const PREFIXES: &[(&str, &str, usize, &str)] = &[
    ("AKIA", "", 16, "aws key"),
    ("ASIA", "", 16, "aws key"),
    ("ghp_", "", 30, "github token"),
    ("gho_", "", 30, "github token"),
    ("ghu_", "", 30, "github token"),
    ("ghs_", "", 30, "github token"),
    ("ghr_", "", 30, "github token"),
    ("github_pat_", "_", 30, "github token"),
    ("glpat-", "_-", 20, "gitlab token"),
    ("xoxb-", "-", 10, "slack token"),
    ("xoxp-", "-", 10, "slack token"),
    ("xoxa-", "-", 10, "slack token"),
    ("xoxr-", "-", 10, "slack token"),
    ("xoxs-", "-", 10, "slack token"),
    ("npm_", "", 36, "npm token"),
    ("sk_live_", "", 16, "stripe key"),
    ("rk_live_", "", 16, "stripe key"),
    ("sk_test_", "", 16, "stripe key"),
    ("AIza", "_-", 35, "google api key"),
    ("sk-", "_-", 20, "api key"),
];

fn tokens(line: &str, spans: &mut Vec<(usize, usize, &'static str)>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // A token starts at a word boundary.
        if i > 0 && (is_word(b[i - 1]) || b[i - 1] == b'-') {
            i += 1;
            continue;
        }
        if let Some(e) = jwt(b, i) {
            spans.push((i, e, "token"));
            i = e;
            continue;
        }
        let mut matched = false;
        for &(prefix, extra, min, what) in PREFIXES {
            if !b[i..].starts_with(prefix.as_bytes()) {
                continue;
            }
            let start = i + prefix.len();
            let mut e = start;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || extra.as_bytes().contains(&b[e]))
            {
                e += 1;
            }
            let body = &b[start..e];
            // A real key has letters and digits (`sk-` would otherwise take
            // `sk-some-long-option-name`).
            let mixed =
                body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic);
            if e - start >= min && mixed && !(e < b.len() && is_word(b[e])) {
                spans.push((i, e, what));
                i = e;
                matched = true;
                break;
            }
        }
        if !matched {
            i += 1;
        }
    }
}

/// A JSON web token at `i` (`eyJ….eyJ….sig`): its end.
fn jwt(b: &[u8], i: usize) -> Option<usize> {
    let seg = |mut k: usize| {
        let s = k;
        while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_' || b[k] == b'-') {
            k += 1;
        }
        (k - s >= 10).then_some(k)
    };
    if !b[i..].starts_with(b"eyJ") {
        return None;
    }
    let e1 = seg(i)?;
    if b.get(e1) != Some(&b'.') || !b[e1 + 1..].starts_with(b"eyJ") {
        return None;
    }
    let e2 = seg(e1 + 1)?;
    if b.get(e2) != Some(&b'.') {
        return None;
    }
    seg(e2 + 1)
}

/// `scheme://user:password@host`: the password.
fn url_password(line: &str, spans: &mut Vec<(usize, usize, &'static str)>) {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(k) = line[from..].find("://") {
        let start = from + k + 3;
        from = start;
        let mut e = start;
        while e < b.len()
            && !matches!(
                b[e],
                b'/' | b'@' | b' ' | b'\t' | b'"' | b'\'' | b'`' | b'<' | b'>'
            )
        {
            e += 1;
        }
        if b.get(e) != Some(&b'@') {
            continue;
        }
        let Some(colon) = line[start..e].find(':').map(|c| start + c) else {
            continue;
        };
        let pw = &line[colon + 1..e];
        if !pw.is_empty() && !is_reference(pw) {
            spans.push((colon + 1, e, "password"));
        }
    }
}

/// Name parts that say a value is a secret (lower case, `_`/`-`/`.` removed).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
];

/// Whether an assignment's name says its value is a secret.
fn secret_name(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_WORDS.iter().any(|w| n.contains(w))
        || n.ends_with("token")
        || n == "pwd"
        || n.ends_with("authkey")
}

/// A value that names a secret rather than holding it.
fn is_reference(v: &str) -> bool {
    v.starts_with('$')
        || v.starts_with('<')
        || v.starts_with('{')
        || v.starts_with('%')
        || v.contains("process.env")
        || v.contains("os.environ")
        || v.contains("[redacted")
        || v.chars().all(|c| c == '*' || c == 'x' || c == 'X')
        || v.parse::<f64>().is_ok()
        || matches!(v, "true" | "false" | "null" | "none" | "None" | "undefined")
}

fn assignment(line: &str, spans: &mut Vec<(usize, usize, &'static str)>) {
    env_form(line, spans);
    quoted_form(line, spans);
}

/// `NAME=value` at the line's start (after `export `, `set `, `- `,
/// spaces), or `NAME: value` for an upper-case name (compose, CI YAML).
fn env_form(line: &str, spans: &mut Vec<(usize, usize, &'static str)>) {
    let mut at = line.len() - line.trim_start().len();
    for p in ["export ", "set ", "- "] {
        if line[at..].starts_with(p) {
            at += p.len();
        }
    }
    let rest = &line[at..];
    if !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return;
    }
    let name_len = rest
        .bytes()
        .take_while(|&c| is_word(c) || c == b'.')
        .count();
    let name = &rest[..name_len];
    let after = &rest[name_len..];
    let sep = if after.starts_with('=') {
        1
    } else if after.starts_with(": ") && !name.bytes().any(|c| c.is_ascii_lowercase()) {
        2
    } else {
        return;
    };
    if !secret_name(name) {
        return;
    }
    let vstart = at + name_len + sep;
    let (s, e) = unquote(
        line,
        vstart + (line[vstart..].len() - line[vstart..].trim_start().len()),
    );
    let value = &line[s..e];
    if value.len() >= 4 && !is_reference(value) {
        spans.push((s, e, "secret"));
    }
}

/// The span of the value starting at `s`, without surrounding quotes (or,
/// unquoted, up to the first space).
fn unquote(line: &str, s: usize) -> (usize, usize) {
    let t = line[s..].trim_end();
    let b = t.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') {
        if let Some(close) = t[1..].find(b[0] as char) {
            return (s + 1, s + 1 + close);
        }
    }
    let end = t.find(char::is_whitespace).unwrap_or(t.len());
    (s, s + end)
}

/// `name: "value"`, `"name": "value"`, `name = 'value'`, `name := "value"`
/// anywhere in the line, for a secret name and a literal of 8+ characters
/// without spaces.
fn quoted_form(line: &str, spans: &mut Vec<(usize, usize, &'static str)>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let q = b[i];
        if q != b'"' && q != b'\'' && q != b'`' {
            i += 1;
            continue;
        }
        let Some(close) = line[i + 1..].find(q as char).map(|c| i + 1 + c) else {
            break;
        };
        let value = &line[i + 1..close];
        // What precedes the opening quote: `name: `, `"name": `, `name = `.
        let before = line[..i].trim_end();
        let before = before
            .strip_suffix(":=")
            .or_else(|| before.strip_suffix("=>"))
            .or_else(|| before.strip_suffix(':'))
            .or_else(|| before.strip_suffix('='));
        if let Some(before) = before {
            let before = before.trim_end().trim_end_matches(['"', '\'']);
            let name_start = before
                .bytes()
                .rposition(|c| !(is_word(c) || c == b'-' || c == b'.'))
                .map_or(0, |p| p + 1);
            let name = &before[name_start..];
            if !name.is_empty()
                && secret_name(name)
                && value.len() >= 8
                && !value.contains(char::is_whitespace)
                && !is_reference(value)
            {
                spans.push((i + 1, close, "secret"));
            }
        }
        i = close + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    fn r(s: &str) -> String {
        redact(s).unwrap_or_else(|| s.to_string())
    }

    #[test]
    fn dotenv_values_are_redacted_and_names_kept() {
        let env = "DATABASE_PASSWORD=hunter2hunter2\nexport STRIPE_SECRET_KEY=\"abc123def456\"\nGITHUB_TOKEN=zzzzzzzz1\nPORT=8080\nDEBUG=true\n";
        let out = r(env);
        assert_eq!(
            out,
            "DATABASE_PASSWORD=[redacted: secret]\nexport STRIPE_SECRET_KEY=\"[redacted: secret]\"\nGITHUB_TOKEN=[redacted: secret]\nPORT=8080\nDEBUG=true\n"
        );
        // Compose lists and upper-case YAML keys; CRLF kept.
        assert_eq!(
            r("  - POSTGRES_PASSWORD=example1\r\n    MYSQL_ROOT_PASSWORD: rootpw99\r\n"),
            "  - POSTGRES_PASSWORD=[redacted: secret]\r\n    MYSQL_ROOT_PASSWORD: [redacted: secret]\r\n"
        );
    }

    #[test]
    fn published_token_formats_are_redacted_anywhere() {
        let aws = "key AKIAIOSFODNN7EXAMPLE end";
        assert_eq!(r(aws), "key [redacted: aws key] end");
        let gh = format!("Authorization: token ghp_{}", "a1".repeat(18));
        assert_eq!(r(&gh), "Authorization: token [redacted: github token]");
        let bearer =
            "curl -H 'Authorization: Bearer sk-ant-api03-Abc123Def456Ghi789Jkl' https://api";
        assert_eq!(
            r(bearer),
            "curl -H 'Authorization: Bearer [redacted: api key]' https://api"
        );
        let jwt = "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(r(jwt), "t=[redacted: token]");
    }

    #[test]
    fn private_key_blocks_keep_their_markers_only() {
        let pem = "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACDx\n-----END OPENSSH PRIVATE KEY-----\nz\n";
        assert_eq!(
            r(pem),
            "a\n-----BEGIN OPENSSH PRIVATE KEY-----\n[redacted: private key]\n-----END OPENSSH PRIVATE KEY-----\nz\n"
        );
        // On one line, as in a JSON credentials file: only the key goes.
        let json = r#"  "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----\n","#;
        assert_eq!(
            r(&format!("{json}\n  \"client_email\": \"a@b.iam\"\n")),
            "  \"private_key\": \"-----BEGIN PRIVATE KEY-----[redacted: private key]-----END PRIVATE KEY-----\\n\",\n  \"client_email\": \"a@b.iam\"\n"
        );
        // A public key or certificate is not a secret.
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        assert_eq!(redact(cert), None);
    }

    #[test]
    fn url_passwords_are_redacted() {
        assert_eq!(
            r("DATABASE_URL is postgres://app:s3cr3t@db:5432/app"),
            "DATABASE_URL is postgres://app:[redacted: password]@db:5432/app"
        );
        assert_eq!(
            redact("see https://example.com:8080/path and git@github.com:a/b"),
            None
        );
    }

    #[test]
    fn quoted_secret_literals_are_redacted() {
        assert_eq!(
            r(r#"  "apiKey": "AbC123xyz987", "name": "demo""#),
            r#"  "apiKey": "[redacted: secret]", "name": "demo""#
        );
        assert_eq!(
            r("password = 'correcthorse9'"),
            "password = '[redacted: secret]'"
        );
    }

    #[test]
    fn source_code_and_references_are_left_alone() {
        for s in [
            "const token = getToken();",
            "const API_KEY = process.env.API_KEY;",
            "password: string;",
            "export GITHUB_TOKEN=$GH_TOKEN",
            "  token: ${{ secrets.NPM_TOKEN }}",
            "MAX_TOKENS=4096",
            "let password = \"short\";",
            "const label = \"password reset requested\";",
            "run: npm publish --access public",
            "the disk-usage-monitor-helper-script ran",
            "AUTHOR=Mario Zechner",
            "fn tokenize(input: &str) -> Vec<Token>",
        ] {
            assert_eq!(redact(s), None, "{s}");
        }
    }
}
