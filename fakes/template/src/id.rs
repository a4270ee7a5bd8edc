//! Instance IDs: `sites/<site>/instances/<name>`, built and parsed in one place.

use conformance::{ProviderId, validate_name};

/// Builds the ID of `name` at `site`.
pub fn instance_id(site: &str, name: &str) -> ProviderId {
    ProviderId::new(format!("sites/{site}/instances/{name}"))
}

/// Splits an ID into site and name; `None` when it is malformed.
///
/// Both the site and the name must be valid labels (lowercase letters, digits and
/// `-`, starting with a letter); whether the site is configured is the caller's
/// question.
pub fn parse_id(id: &ProviderId) -> Option<(&str, &str)> {
    let mut parts = id.as_str().split('/');
    let (Some("sites"), Some(site), Some("instances"), Some(name), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    (validate_name(site).is_ok() && validate_name(name).is_ok()).then_some((site, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("sites/site-a/instances/web-1", Some(("site-a", "web-1")))]
    #[case("sites/site-z/instances/x", Some(("site-z", "x")))]
    #[case("", None)]
    #[case("sites/site-a/instances", None)]
    #[case("sites/site-a/instances/", None)]
    #[case("sites//instances/x", None)]
    #[case("sites/site-a/instances/x/", None)]
    #[case("/sites/site-a/instances/x", None)]
    #[case("hosts/site-a/domains/x", None)]
    #[case("sites/site-a/instances/Web", None)]
    #[case("sites/site-a/instances/a b", None)]
    #[case("sites/Site-A/instances/x", None)]
    #[case("sites/site-a/instances/ü", None)]
    fn parses_only_well_formed_ids(#[case] raw: &str, #[case] want: Option<(&str, &str)>) {
        assert_eq!(parse_id(&ProviderId::new(raw)), want);
    }

    #[test]
    fn round_trips() {
        let id = instance_id("site-b", "db-0");
        assert_eq!(parse_id(&id), Some(("site-b", "db-0")));
    }
}
