//! `catalogue`: the rule catalogue for tools in other languages, as JSON (the rules
//! as data) or as the Markdown contract document.

use crate::rules::CATALOGUE;
use crate::suite::tags::tags_of;

/// What `catalogue` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogueFormat {
    /// Every rule as a JSON object: ID, area, title, text, axes, gate, hooks, needs and
    /// tags.
    Json,
    /// The contract document, as `docs/provider-contract.md` holds it.
    Md,
}

/// The catalogue rendered as `format`, ending in a newline.
pub fn catalogue(format: CatalogueFormat) -> String {
    match format {
        CatalogueFormat::Json => {
            // The catalogue is static plain data with string keys: it always serialises.
            let rules: Vec<serde_json::Value> = CATALOGUE
                .iter()
                .map(|r| {
                    let mut v = serde_json::to_value(r).expect("a rule serialises");
                    v["tags"] = tags_of(r).into();
                    v
                })
                .collect();
            let mut out = serde_json::to_string_pretty(&rules).expect("the catalogue serialises");
            out.push('\n');
            out
        }
        CatalogueFormat::Md => crate::contract_doc::render(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lists_every_rule_in_catalogue_order() {
        let v: serde_json::Value = serde_json::from_str(&catalogue(CatalogueFormat::Json)).unwrap();
        let ids: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        let want: Vec<&str> = CATALOGUE.iter().map(|r| r.id).collect();
        assert_eq!(ids, want);
        assert!(v[0]["text"].as_str().is_some_and(|t| !t.is_empty()));
        let quota = v
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "CRE-QUOTA")
            .unwrap();
        assert_eq!(quota["tags"], serde_json::json!(["capacity"]));
    }

    #[test]
    fn markdown_is_the_contract_document() {
        assert_eq!(
            catalogue(CatalogueFormat::Md),
            crate::contract_doc::render()
        );
    }
}
