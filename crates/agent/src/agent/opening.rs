//! What the agent says once, as the session starts: a resumed session's earlier runs
//! and the lines restoring it had to say. Both are taken (emptied) when said.

use crate::protocol::Past;

#[derive(Default)]
pub(super) struct Opening {
    /// Shown once the session starts (what restoring it mended).
    pub(super) notices: Vec<String>,
    /// A resumed session's earlier runs, shown once it starts.
    pub(super) past: Vec<Past>,
}
