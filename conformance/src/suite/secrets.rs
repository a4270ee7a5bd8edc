//! Every cloud-init payload the suite hands a provider is a secret: this module marks
//! each one, remembers which rule handed it out, finds it wherever it shows up, and
//! blanks it out of everything the suite writes or prints.
//!
//! A payload is marked with a token of its own, `cfpayload` and 24 hex digits, on a
//! comment line of its own: after the first line when the payload starts with `#`
//! (`#cloud-config`, `#!/bin/sh`, whose first line names the format), at its end
//! otherwise. A token is plain ASCII, so it survives every escaping a leak may go
//! through (Rust's `Debug`, JSON, XML, HTML) and is found by a linear scan of any
//! text, however many payloads a run handed out. CRE-SECRET puts tokens of its own in
//! the middle of its payloads, where a provider that leaks a part would show one.
//!
//! [`redact`] blanks the whole payload where it appears whole (as written, or escaped
//! as `Debug` writes it) and every token otherwise, registered or not: a token from
//! another process (a provider's stderr, a report being merged) is blanked as well.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use crate::CloudInit;

/// What every token starts with.
pub const TOKEN_PREFIX: &str = "cfpayload";

/// Hex digits after the prefix.
const TOKEN_DIGITS: usize = 24;

/// What replaces a payload, or a part of one, in anything the suite writes.
pub const REDACTED: &str = "[redacted: cloud-init user data]";

#[derive(Default)]
struct Registry {
    /// The owner (one run of one rule's check) each token belongs to.
    owner: HashMap<String, String>,
    /// The whole payload each token marks, for blanking it whole.
    payload: HashMap<String, String>,
    /// The marked form of each payload an owner handed out, so that the same
    /// request asked for twice carries the same payload twice.
    marked: HashMap<(String, String), String>,
    /// Every line of every payload (trimmed, at least [`MIN_LINE`] bytes), for
    /// blanking a payload printed line by line (a provider's stderr).
    lines: HashSet<String>,
    /// The longest of `lines`.
    longest: usize,
}

/// The shortest payload line blanked on its own: shorter ones (`runcmd:`) say nothing.
const MIN_LINE: usize = 8;

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A name for one run of one rule's check (`CRE-QUOTA#12`), unique in the process:
/// what owns the payloads it hands out. Runs of the same rule at once (a kill matrix
/// runs many suites in one process) own different payloads.
pub fn new_owner(rule: &str) -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!(
        "{rule}#{}",
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// A new token, registered as `owner`'s.
pub fn new_token(owner: &str) -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    let token = format!("{TOKEN_PREFIX}{}", &hex[..TOKEN_DIGITS]);
    registry()
        .get_or_insert_with(Registry::default)
        .owner
        .insert(token.clone(), owner.to_owned());
    token
}

/// `payload` marked with a token of `owner`'s, and registered whole; the same payload
/// handed out twice by one owner is marked the same way both times. An empty payload
/// stays empty: there is nothing in it to leak.
pub fn mark(owner: &str, payload: &CloudInit) -> CloudInit {
    let text = payload.expose();
    if text.is_empty() {
        return payload.clone();
    }
    let key = (owner.to_owned(), text.to_owned());
    if let Some(done) = registry().as_ref().and_then(|r| r.marked.get(&key)) {
        return CloudInit::new(done.clone());
    }
    let token = new_token(owner);
    let line = format!("# {token}\n");
    let marked = match text.split_once('\n') {
        Some((first, rest)) if text.starts_with('#') => format!("{first}\n{line}{rest}"),
        None if text.starts_with('#') => format!("{text}\n{line}"),
        _ if text.ends_with('\n') => format!("{text}{line}"),
        _ => format!("{text}\n{line}"),
    };
    register_whole(&token, &marked);
    registry()
        .get_or_insert_with(Registry::default)
        .marked
        .insert(key, marked.clone());
    CloudInit::new(marked)
}

/// Registers `payload` as the whole payload that carries `token`, so that [`redact`]
/// blanks all of it where it appears whole.
pub fn register_whole(token: &str, payload: &str) {
    let mut reg = registry();
    let reg = reg.get_or_insert_with(Registry::default);
    reg.payload.insert(token.to_owned(), payload.to_owned());
    for line in payload.lines().map(str::trim) {
        if line.len() >= MIN_LINE && !reg.lines.contains(line) {
            reg.longest = reg.longest.max(line.len());
            reg.lines.insert(line.to_owned());
        }
    }
}

/// Every token in `text`, in order, with where each starts.
fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.match_indices(TOKEN_PREFIX).filter_map(move |(at, _)| {
        let end = at + TOKEN_PREFIX.len() + TOKEN_DIGITS;
        let digits = text.get(at + TOKEN_PREFIX.len()..end)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
            .then(|| (at, &text[at..end]))
    })
}

/// The owners whose payloads appear in `text` (each once, in order of appearance).
pub fn owners_in(text: &str) -> Vec<String> {
    let reg = registry();
    let Some(reg) = reg.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for (_, t) in tokens(text) {
        if let Some(owner) = reg.owner.get(t)
            && !out.contains(owner)
        {
            out.push(owner.clone());
        }
    }
    out
}

/// Whether a payload of `owner`'s appears in `text`.
pub fn leaks(text: &str, owner: &str) -> bool {
    if !any_in(text) {
        return false;
    }
    let reg = registry();
    let Some(reg) = reg.as_ref() else {
        return false;
    };
    tokens(text).any(|(_, t)| reg.owner.get(t).is_some_and(|o| o == owner))
}

/// Whether any payload (a token, registered or not) appears in `text`.
pub fn any_in(text: &str) -> bool {
    tokens(text).next().is_some()
}

/// `text` with every payload blanked: whole where it appears whole (as written or
/// escaped as `Debug` escapes it), a line of one where it ends a line of `text` (a
/// payload printed line by line), its token wherever it is. Borrowed when there was
/// none.
pub fn redact(text: &str) -> Cow<'_, str> {
    let wholes = if any_in(text) {
        Some(blank_wholes(text))
    } else {
        None
    };
    let current: &str = wholes.as_deref().unwrap_or(text);
    let lines = match blank_lines(current) {
        Cow::Owned(t) => Some(t),
        Cow::Borrowed(_) => None,
    };
    let current: &str = lines.as_deref().unwrap_or(current);
    if any_in(current) {
        return Cow::Owned(blank_tokens(current));
    }
    match (lines, wholes) {
        (Some(t), _) | (None, Some(t)) => Cow::Owned(t),
        (None, None) => Cow::Borrowed(text),
    }
}

/// `text` with every registered payload whose token it holds blanked where it appears
/// whole, as written or escaped as `Debug` escapes it.
fn blank_wholes(text: &str) -> String {
    let wholes: Vec<String> = {
        let reg = registry();
        let mut w = Vec::new();
        if let Some(reg) = reg.as_ref() {
            for (_, t) in tokens(text) {
                if let Some(p) = reg.payload.get(t) {
                    w.push(p.clone());
                    w.push(escaped(p));
                }
            }
        }
        w
    };
    let mut out = text.to_owned();
    for w in wholes.iter().filter(|w| !w.is_empty()) {
        if out.contains(w.as_str()) {
            out = out.replace(w.as_str(), REDACTED);
        }
    }
    out
}

/// `text` with every token blanked.
fn blank_tokens(text: &str) -> String {
    let mut clean = String::with_capacity(text.len());
    let mut from = 0;
    for (at, t) in tokens(text) {
        clean.push_str(&text[from..at]);
        clean.push_str(REDACTED);
        from = at + t.len();
    }
    clean.push_str(&text[from..]);
    clean
}

/// `text` with the end of each of its lines blanked where it is a line of a payload
/// (the whole line, or what follows a space in it).
fn blank_lines(text: &str) -> Cow<'_, str> {
    let reg = registry();
    let Some(reg) = reg.as_ref().filter(|r| !r.lines.is_empty()) else {
        return Cow::Borrowed(text);
    };
    let hit = |line: &str| -> Option<usize> {
        let body = line.trim_end();
        let starts = std::iter::once(0).chain(
            body.match_indices(char::is_whitespace)
                .map(|(i, w)| i + w.len()),
        );
        starts
            .filter(|&i| body.len() - i <= reg.longest)
            .find(|&i| reg.lines.contains(body[i..].trim_start()))
    };
    if !text.split('\n').any(|l| hit(l).is_some()) {
        return Cow::Borrowed(text);
    }
    let out: Vec<String> = text
        .split('\n')
        .map(|l| match hit(l) {
            Some(i) => format!("{}{REDACTED}", &l[..i]),
            None => l.to_owned(),
        })
        .collect();
    Cow::Owned(out.join("\n"))
}

/// `text` as `Debug` writes a string, without the quotes.
fn escaped(text: &str) -> String {
    let d = format!("{text:?}");
    d[1..d.len() - 1].to_owned()
}

/// Redacts `text` in place.
pub fn redact_in_place(text: &mut String) {
    if let Cow::Owned(clean) = redact(text) {
        *text = clean;
    }
}

/// Wraps the process's panic hook (once) so that a panic message holding a payload is
/// printed blanked; other panics print as before.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or_default();
            if !any_in(text) {
                return previous(info);
            }
            let thread = std::thread::current();
            let at = info
                .location()
                .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            eprintln!(
                "thread '{}' panicked{at}:\n{}",
                thread.name().unwrap_or("<unnamed>"),
                redact(text)
            );
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_payload_keeps_its_first_line_and_is_blanked_whole() {
        let owner = new_owner("CRE-MARK");
        let p = mark(&owner, &CloudInit::new("#cloud-config\nhostname: web-1\n"));
        assert_eq!(
            mark(&owner, &CloudInit::new("#cloud-config\nhostname: web-1\n")),
            p,
            "the same request twice carries the same payload"
        );
        let text = p.expose().to_owned();
        assert!(text.starts_with("#cloud-config\n# cfpayload"), "{text}");
        assert!(text.ends_with("hostname: web-1\n"), "{text}");
        assert_eq!(owners_in(&text), std::slice::from_ref(&owner));
        assert!(leaks(&format!("warn: {text:?}"), &owner));
        assert!(!leaks(&text, &new_owner("CRE-MARK")));
        let line = format!("WARN create failed, payload {text:?}; retry");
        assert_eq!(
            redact(&line),
            format!("WARN create failed, payload \"{REDACTED}\"; retry")
        );
        let raw = format!("user-data: {text}end");
        assert_eq!(redact(&raw), format!("user-data: {REDACTED}end"));
    }

    #[test]
    fn a_part_of_a_payload_loses_its_token_and_an_unknown_token_is_blanked_too() {
        let p = mark(&new_owner("CRE-QUOTA"), &CloudInit::new("runcmd only"));
        let text = p.expose();
        assert!(text.starts_with("runcmd only\n# cfpayload"));
        let part = &text[5..];
        let out = redact(part);
        assert!(!any_in(&out), "{out}");
        assert!(out.contains(REDACTED));
        let foreign = "stderr: cfpayload0123456789abcdef01234567 and cfpayloadxyz";
        assert_eq!(
            redact(foreign),
            format!("stderr: {REDACTED} and cfpayloadxyz")
        );
        assert!(owners_in(foreign).is_empty());
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_payload_printed_line_by_line_is_blanked_line_by_line() {
        let p = mark(
            &new_owner("GET-STATE"),
            &CloudInit::new("#cloud-config\nhostname: printed-line-by-line\n"),
        );
        let mut out = Vec::new();
        for line in format!("user data {}", p.expose()).lines() {
            out.push(redact(line).into_owned());
        }
        assert_eq!(
            out,
            [
                format!("user data {REDACTED}"),
                REDACTED.to_owned(),
                REDACTED.to_owned()
            ]
        );
        assert_eq!(redact("the hostname: is unset"), "the hostname: is unset");
    }

    #[test]
    fn an_empty_payload_stays_empty() {
        assert!(mark(&new_owner("CRE-MARK"), &CloudInit::new("")).is_empty());
    }
}
