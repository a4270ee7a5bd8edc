//! Instance IDs: `hosts/<host>/domains/<name>`.

use conformance::ProviderId;

/// A parsed instance ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceId {
    /// The host name.
    pub host: String,
    /// The domain name.
    pub name: String,
}

/// Formats the ID of `name` on `host`.
pub fn format_id(host: &str, name: &str) -> ProviderId {
    ProviderId::new(format!("hosts/{host}/domains/{name}"))
}

/// Parses an ID; `None` when it is malformed (wrong shape, bad host or instance name).
pub fn parse_id(id: &ProviderId) -> Option<InstanceId> {
    let mut parts = id.as_str().split('/');
    let (a, host, b, name) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || a != "hosts" || b != "domains" {
        return None;
    }
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        && host != "."
        && host != "..";
    if !host_ok || conformance::validate_name(name).is_err() {
        return None;
    }
    Some(InstanceId {
        host: host.to_owned(),
        name: name.to_owned(),
    })
}

/// IDs that are not kvm2 IDs, built around the configured host `host` so that
/// only their shape is wrong: what a fixture hands the suite for GET-MALFORMED
/// and DEL-MALFORMED.
pub fn malformed_examples(host: &str) -> Vec<String> {
    vec![
        String::new(),
        "hosts".into(),
        format!("hosts/{host}"),
        format!("hosts/{host}/domains"),
        format!("hosts/{host}/domains/"),
        "hosts//domains/x".into(),
        format!("host/{host}/domains/x"),
        format!("hosts/{host}/domain/x"),
        format!("hosts/{host}/domains/x/extra"),
        format!("hosts/{host}/domains/Upper"),
        format!("hosts/{host}/domains/../x"),
        "hosts/host a/domains/x".into(),
    ]
}

/// The ID of `name` on a host that no configuration names.
pub fn unconfigured(name: &str) -> ProviderId {
    format_id("no-such-host", name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn malformed_examples_never_parse() {
        for id in malformed_examples("host-a") {
            assert_eq!(parse_id(&ProviderId::new(id.clone())), None, "{id:?}");
        }
        assert!(parse_id(&unconfigured("vm-1")).is_some(), "well formed");
    }

    #[test]
    fn round_trip() {
        let id = format_id("beelink", "proxy-1");
        assert_eq!(id.as_str(), "hosts/beelink/domains/proxy-1");
        let p = parse_id(&id).unwrap();
        assert_eq!((p.host.as_str(), p.name.as_str()), ("beelink", "proxy-1"));
    }

    #[rstest]
    #[case("")]
    #[case("hosts")]
    #[case("hosts/a")]
    #[case("hosts/a/domains")]
    #[case("hosts/a/domains/")]
    #[case("hosts//domains/x")]
    #[case("host/a/domains/x")]
    #[case("hosts/a/domain/x")]
    #[case("hosts/a/domains/x/y")]
    #[case("hosts/a/domains/Upper")]
    #[case("hosts/../domains/x")]
    #[case("hosts/a b/domains/x")]
    fn malformed(#[case] s: &str) {
        assert_eq!(parse_id(&ProviderId::new(s)), None, "{s:?}");
    }
}
