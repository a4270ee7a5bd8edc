//! Finding an instance's backend record and reading its mark, wherever the profile
//! says the mark lives: beside the record (`gc-mark=written-metadata` or
//! `backend-tags`, one `ReadMark` call) or in the record's name
//! (`gc-mark=name-prefix`: `<tag>~<uid>~<name>`, found with one `List` call).

use conformance::CreateRequest;
use conformance::profile::GcMark;

use crate::backend::{
    BackendError, InstanceInfo, Mark, Proc, mark_in_name, name_with_mark, short_name,
};

use super::{Failure, Session, TemplateProvider};

impl TemplateProvider {
    /// Whether the mark is the prefix of the backend name (`gc-mark=name-prefix`).
    pub(super) fn marks_in_names(&self) -> bool {
        self.config.declared.gc_mark() == GcMark::NamePrefix
    }

    /// The backend name a new instance of `req` is defined under.
    pub(super) fn backend_name(&self, req: &CreateRequest, mark: &Mark) -> String {
        if self.marks_in_names() {
            name_with_mark(mark, &req.name)
        } else {
            req.name.clone()
        }
    }

    /// Finds the instance named `name`: its backend name and what the backend says of
    /// it. A missing instance is the backend's no-object failure.
    pub(super) async fn look_up(
        &self,
        s: &Session<'_>,
        name: &str,
    ) -> Result<(String, InstanceInfo), Failure> {
        let key = if self.marks_in_names() {
            let listed = s
                .read(Proc::List, || self.backend.list(s.conn, s.site))
                .await?;
            listed
                .into_iter()
                .map(|l| l.name)
                .find(|n| short_name(n) == name)
                .ok_or_else(|| {
                    Failure::Backend(BackendError::NoObject(format!("instance {name}")))
                })?
        } else {
            name.to_owned()
        };
        let info = s
            .call(Proc::Lookup, self.backend.lookup(s.conn, s.site, &key))
            .await?;
        Ok((key, info))
    }

    /// The mark of the instance whose backend name is `key`; `None` when it has none.
    pub(super) async fn mark_of(
        &self,
        s: &Session<'_>,
        key: &str,
    ) -> Result<Option<Mark>, Failure> {
        if self.marks_in_names() {
            return Ok(mark_in_name(key).0);
        }
        s.call(Proc::ReadMark, self.backend.read_mark(s.conn, s.site, key))
            .await
    }
}
