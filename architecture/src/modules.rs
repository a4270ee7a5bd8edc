//! The module graph of one crate target, read from its source with `syn`: which module
//! names which, through `crate::`, `super::` and `self::` paths in `use` items and in
//! code, and the circles those names make between sibling modules.
//!
//! A module is found by following `mod` items from the target's root file (inline
//! modules included, `#[path]` honoured); code under `#[cfg(test)]` is left out, as
//! tests may reach across modules. A path is resolved to the deepest module it names,
//! so `crate::suite::cli::args::Args` is an edge to `suite::cli::args`. Names brought in
//! by a glob (`use super::*`) or re-exported under another path are not followed: the
//! graph is what the code spells out, which is what a reader follows too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module's path from the crate root (empty for the root).
pub type ModPath = Vec<String>;

/// What one crate target's modules name.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    /// Every module, with the file it is written in.
    pub modules: BTreeMap<ModPath, PathBuf>,
    /// Module → the modules it names, each with one path that names it.
    pub edges: BTreeMap<ModPath, BTreeMap<ModPath, String>>,
}

/// Sibling modules that name one another in a circle (a strongly connected set): each
/// reaches every other through the names in `via`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The siblings' parent.
    pub parent: ModPath,
    /// The siblings, sorted.
    pub members: Vec<String>,
    /// Every name one member gives another: (from, to, the path spelled in `from`).
    pub via: Vec<(String, String, String)>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parent = if self.parent.is_empty() {
            "crate".to_owned()
        } else {
            self.parent.join("::")
        };
        write!(f, "under {parent}, {{{}}}:", self.members.join(", "))?;
        for (from, to, path) in &self.via {
            write!(f, " {from} → {to} (`{path}`);")?;
        }
        Ok(())
    }
}

/// Reads the modules reachable from `root` (a `lib.rs`, `main.rs` or binary file).
pub fn read(root: &Path) -> Result<ModuleGraph, String> {
    let mut graph = ModuleGraph::default();
    let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
    read_file(root, Vec::new(), dir, &mut graph)?;
    Ok(graph.resolve())
}

fn read_file(
    file: &Path,
    module: ModPath,
    child_dir: PathBuf,
    graph: &mut ModuleGraph,
) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let ast =
        syn::parse_file(&text).map_err(|e| format!("cannot parse {}: {e}", file.display()))?;
    graph.modules.insert(module.clone(), file.to_path_buf());
    read_items(&ast.items, &module, &child_dir, file, graph)
}

fn read_items(
    items: &[syn::Item],
    module: &ModPath,
    child_dir: &Path,
    file: &Path,
    graph: &mut ModuleGraph,
) -> Result<(), String> {
    let mut names = Names {
        module,
        found: Vec::new(),
    };
    for item in items {
        if is_test_only(item_attrs(item)) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                let mut child = module.clone();
                child.push(m.ident.to_string());
                let path_attr = path_attribute(&m.attrs);
                match &m.content {
                    Some((_, inner)) => {
                        graph.modules.insert(child.clone(), file.to_path_buf());
                        let dir = child_dir.join(m.ident.to_string());
                        read_items(inner, &child, &dir, file, graph)?;
                    }
                    None => {
                        let name = m.ident.to_string();
                        let (child_file, dir) = match path_attr {
                            Some(p) => {
                                let f = child_dir.join(p);
                                let d = f.with_extension("");
                                (f, d)
                            }
                            None => {
                                let flat = child_dir.join(format!("{name}.rs"));
                                let nested = child_dir.join(&name).join("mod.rs");
                                let f = if flat.exists() { flat } else { nested };
                                (f, child_dir.join(&name))
                            }
                        };
                        read_file(&child_file, child, dir, graph)?;
                    }
                }
            }
            other => names.visit_item(other),
        }
    }
    // A sibling read later is not known yet: the whole path is kept, and cut down to
    // the module it names once every module is known (`resolve`).
    for (target, spelled) in names.found {
        graph
            .edges
            .entry(module.clone())
            .or_default()
            .entry(target)
            .or_insert(spelled);
    }
    Ok(())
}

impl ModuleGraph {
    /// Cuts every edge's target down to the deepest module it names, and drops edges
    /// that name no module of this crate (or the module itself).
    fn resolve(mut self) -> ModuleGraph {
        let mut edges: BTreeMap<ModPath, BTreeMap<ModPath, String>> = BTreeMap::new();
        for (from, tos) in std::mem::take(&mut self.edges) {
            for (to, via) in tos {
                let mut cut = to.clone();
                while !cut.is_empty() && !self.modules.contains_key(&cut) {
                    cut.pop();
                }
                if cut != from && self.modules.contains_key(&cut) {
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(cut)
                        .or_insert(via);
                }
            }
        }
        self.edges = edges;
        self
    }

    /// Every circle between sibling modules (a name between a module and its own
    /// ancestor or descendant makes none), each given once as the whole set of siblings
    /// that reach one another.
    pub fn sibling_circles(&self) -> Vec<Circle> {
        // parent → sibling → sibling → one path spelled in the first.
        let mut levels: BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, String>>> =
            BTreeMap::new();
        for (from, tos) in &self.edges {
            for (to, via) in tos {
                let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    continue;
                }
                levels
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .entry(to[common].clone())
                    .or_insert_with(|| via.clone());
            }
        }
        let mut circles = Vec::new();
        for (parent, level) in levels {
            let mut placed: BTreeSet<&String> = BTreeSet::new();
            for start in level.keys() {
                if placed.contains(start) {
                    continue;
                }
                let from_start = reachable(&level, start);
                let members: Vec<String> = from_start
                    .iter()
                    .filter(|m| reachable(&level, m).contains(start.as_str()))
                    .map(|m| (*m).to_owned())
                    .collect();
                if members.len() < 2 {
                    continue;
                }
                placed.extend(level.keys().filter(|k| members.contains(k)));
                let via = members
                    .iter()
                    .flat_map(|m| {
                        level[m]
                            .iter()
                            .filter(|(to, _)| members.contains(to))
                            .map(move |(to, path)| (m.clone(), to.clone(), path.clone()))
                    })
                    .collect();
                circles.push(Circle {
                    parent: parent.clone(),
                    members,
                    via,
                });
            }
        }
        circles
    }

    /// How many module-to-module names the graph holds.
    pub fn edge_count(&self) -> usize {
        self.edges.values().map(BTreeMap::len).sum()
    }
}

/// Every sibling `from` reaches through one or more names (itself included).
fn reachable<'a>(
    level: &'a BTreeMap<String, BTreeMap<String, String>>,
    from: &'a str,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::from([from]);
    let mut todo = vec![from];
    while let Some(at) = todo.pop() {
        for to in level.get(at).into_iter().flat_map(|m| m.keys()) {
            if seen.insert(to.as_str()) {
                todo.push(to.as_str());
            }
        }
    }
    seen
}

/// The paths one module spells, made absolute.
struct Names<'a> {
    module: &'a ModPath,
    found: Vec<(ModPath, String)>,
}

impl Names<'_> {
    /// `segments` as spelled in this module, made absolute if it starts at `crate`,
    /// `super` or `self`.
    fn note(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut at: ModPath = match first.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => self.module.clone(),
            _ => return,
        };
        let mut rest = &segments[1..];
        if first == "super" {
            at.pop();
        }
        while rest.first().map(String::as_str) == Some("super") {
            at.pop();
            rest = &rest[1..];
        }
        at.extend(rest.iter().cloned());
        self.found.push((at, segments.join("::")));
    }
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        flatten(&u.tree, &mut Vec::new(), &mut paths);
        for p in paths {
            self.note(&p);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
        // Modules nested in a function or block are too rare to follow; their paths
        // would be resolved against the wrong module.
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
}

/// Every full path a `use` tree names (a group names several; a glob names its prefix).
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.clone();
            if n.ident != "self" {
                full.push(n.ident.to_string());
            }
            out.push(full);
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix, out);
            }
        }
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Whether the attributes hold `#[cfg(test)]` (alone or inside `all(..)`).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .map(|l| {
                    let t = l.tokens.to_string();
                    t == "test" || (t.starts_with("all") && t.contains("test"))
                })
                .unwrap_or(false)
    })
}

/// The value of a `#[path = "…"]` attribute.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| {
        let nv = a.meta.require_name_value().ok()?;
        if !nv.path.is_ident("path") {
            return None;
        }
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}
