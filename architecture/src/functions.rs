//! How long a crate's functions are, read with `syn` (lines from the `fn` keyword to
//! the closing brace, comments and blank lines included). Functions under
//! `#[cfg(test)]` and test functions are left out.

use std::path::Path;

use syn::spanned::Spanned;
use syn::visit::Visit;

/// A function and how many lines it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// `name`, or `Type::name` for a method, or `Trait::name` for a provided method.
    pub name: String,
    /// The line its `fn` keyword is on.
    pub line: usize,
    /// Lines from the `fn` keyword to the closing brace.
    pub lines: usize,
}

/// Every non-test function written in `file` (nested modules included).
pub fn functions(file: &Path) -> Result<Vec<Function>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let ast =
        syn::parse_file(&text).map_err(|e| format!("cannot parse {}: {e}", file.display()))?;
    let mut v = Lengths {
        owner: None,
        found: Vec::new(),
    };
    v.visit_file(&ast);
    Ok(v.found)
}

struct Lengths {
    owner: Option<String>,
    found: Vec<Function>,
}

impl Lengths {
    fn note(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span().start().line;
        let end = block.span().end().line;
        let name = match &self.owner {
            Some(o) => format!("{o}::{name}"),
            None => name.to_string(),
        };
        self.found.push(Function {
            name,
            line: start,
            lines: end + 1 - start,
        });
    }
}

/// Whether the attributes mark test code: `#[test]`, `#[…::test]`, `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let last = a.path().segments.last().map(|s| s.ident.to_string());
        last.as_deref() == Some("test")
            || (a.path().is_ident("cfg")
                && a.meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string().contains("test")))
    })
}

impl<'ast> Visit<'ast> for Lengths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.note(&f.sig.ident, &f.sig.fn_token, &f.block);
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test(&i.attrs) {
            return;
        }
        let ty = match &*i.self_ty {
            syn::Type::Path(p) => p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default(),
            other => quote_free_name(other),
        };
        let outer = self.owner.replace(ty);
        syn::visit::visit_item_impl(self, i);
        self.owner = outer;
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            self.note(&f.sig.ident, &f.sig.fn_token, &f.block);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        let outer = self.owner.replace(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.owner = outer;
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default
            && !is_test(&f.attrs)
        {
            self.note(&f.sig.ident, &f.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// A name for an implementing type that is not a plain path (`&T`, `[T]`, …).
fn quote_free_name(t: &syn::Type) -> String {
    match t {
        syn::Type::Reference(r) => quote_free_name(&r.elem),
        _ => "_".to_owned(),
    }
}
